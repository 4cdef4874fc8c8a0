package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/rest"
)

// The window profile asks the API server for back-to-back CPU profiles until it ends, and
// saves each one beside the result.
func TestWindowProfileSavesEveryChunk(t *testing.T) {
	var served atomic.Int64
	third := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/debug/pprof/profile" || r.URL.Query().Get("seconds") != "2" {
			http.NotFound(w, r)
			return
		}
		n := served.Add(1)
		_, _ = w.Write([]byte{'p', byte('0' + n%10)})
		if n == 3 {
			close(third)
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	var log bytes.Buffer
	s := &runState{o: options{apiProfile: true, out: filepath.Join(dir, "run.json")}, cfg: &rest.Config{Host: srv.URL}, log: &log}

	w := s.profileAPIServer(context.Background(), "load")
	<-third // the fake server answers at once: the chunks come quickly
	w.end(s)
	files, err := filepath.Glob(filepath.Join(dir, "run.kube-apiserver-load", "*.pprof"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 3 || len(files) != w.chunks {
		t.Fatalf("%d files for %d chunks (%d served)", len(files), w.chunks, served.Load())
	}
	if b, err := os.ReadFile(files[0]); err != nil || string(b) != "p1" {
		t.Fatalf("first chunk %q, %v", b, err)
	}
	if !strings.Contains(log.String(), "run.kube-apiserver-load") {
		t.Fatalf("log %q", log.String())
	}
}

// An API server that refuses the profile (profiling off, or another profile under way) is
// reported, not saved as a profile.
func TestWindowProfileReportsARefusal(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "Could not enable CPU profiling: cpu profiling already in use", http.StatusInternalServerError)
	}))
	defer srv.Close()
	dir := t.TempDir()
	var log bytes.Buffer
	s := &runState{o: options{apiProfile: true, out: filepath.Join(dir, "run.json")}, cfg: &rest.Config{Host: srv.URL}, log: &log}
	w := s.profileAPIServer(context.Background(), "baseline")
	<-w.done
	w.end(s)
	if files, _ := filepath.Glob(filepath.Join(dir, "run.kube-apiserver-baseline", "*")); len(files) != 0 {
		t.Fatalf("saved %v", files)
	}
	if !strings.Contains(log.String(), "500") || !strings.Contains(log.String(), "already in use") {
		t.Fatalf("log %q", log.String())
	}
}

// Off, it is nil, and ending it does nothing.
func TestWindowProfileOff(t *testing.T) {
	s := &runState{o: options{}}
	w := s.profileAPIServer(context.Background(), "load")
	if w != nil {
		t.Fatal("a profile without --apiserver-profile")
	}
	w.end(s)
}
