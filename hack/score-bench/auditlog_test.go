package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAuditLogFollowsRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	appendTo := func(p, s string) {
		f, err := os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	a := &auditLog{path: path}
	read := func() string {
		segs, err := a.segments()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for i, s := range segs {
			text := string(s)
			if i == len(segs)-1 { // only complete lines of the current file count
				n := strings.LastIndexByte(text, '\n') + 1
				text = text[:n]
				a.consumed(n)
			}
			out = append(out, text)
		}
		return strings.Join(out, "|")
	}
	rotate := func(stamp string) {
		if err := os.Rename(path, filepath.Join(dir, "audit-"+stamp+".log")); err != nil {
			t.Fatal(err)
		}
	}

	appendTo(path, "a\nb\npart")
	if got := read(); got != "a\nb\n" {
		t.Fatalf("first read %q", got)
	}
	appendTo(path, "ial\nc\n")
	rotate("2026-11-22T10-00-00.000")
	appendTo(path, "d\n")
	if got := read(); got != "partial\nc\n|d\n" {
		t.Fatalf("across one rotation %q", got)
	}
	appendTo(path, "e\n")
	rotate("2026-11-22T10-00-01.000")
	appendTo(path, "f\n")
	rotate("2026-11-22T10-00-02.000")
	appendTo(path, "g\n")
	if got := read(); got != "e\n|f\n|g\n" {
		t.Fatalf("across two rotations %q", got)
	}
	if got := read(); got != "" {
		t.Fatalf("nothing new %q", got)
	}
}
