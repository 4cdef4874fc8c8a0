package termtext_test

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/score-orchestrator/score-orchestrator/internal/termtext"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/termtest"
)

// Hostile is a message full of terminal escapes.
const Hostile = termtest.Hostile

func TestEscape(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain text is unchanged", "Waiting for postgres db-0: 1/2 ready (ünïcödé, 日本)", "Waiting for postgres db-0: 1/2 ready (ünïcödé, 日本)"},
		{"backslashes are unchanged", `C:\dir \x1b`, `C:\dir \x1b`},
		{"a window title", "\x1b]0;pwned\x07", `\x1b]0;pwned\a`},
		{"a cleared screen", "\x1b[2J\x1b[H", `\x1b[2J\x1b[H`},
		{"a carriage return and a backspace", "a\rb\bc", `a\rb\bc`},
		{"line breaks and tabs stay on the line", "a\nb\tc\vd\fe", `a\nb\tc\vd\fe`},
		{"NUL and DEL", "a\x00b\x7fc", `a\x00b\x7fc`},
		{"a C1 CSI", "\u009b2J", `\u009b2J`},
		{"a byte that is not UTF-8", "\x9b2J \xff", `\x9b2J \xff`},
		{"a cut multi-byte character", "ab\xe6\x97", `ab\xe6\x97`},
		{"bidi overrides and isolates", "\u202eabc\u202c \u2067x\u2069 \u200f\u061c", `\u202eabc\u202c \u2067x\u2069 \u200f\u061c`},
		{"line and paragraph separators", "a\u2028b\u2029", `a\u2028b\u2029`},
		{"the replacement character itself is kept", "a\ufffdb", "a\ufffdb"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := termtext.Escape(tc.in); got != tc.want {
				t.Errorf("Escape(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestBlockKeepsTheLayout(t *testing.T) {
	if got, want := termtext.Block("a\tb\nc\rd\x1b"), "a\tb\nc\\rd\\x1b"; got != want {
		t.Errorf("Block = %q, want %q", got, want)
	}
}

// TestNothingUnsafeIsLeft feeds every rune and a hostile message to both forms: what comes
// out holds no character a terminal acts on, is UTF-8, and escaping it again changes nothing.
func TestNothingUnsafeIsLeft(t *testing.T) {
	var all strings.Builder
	for r := rune(0); r < 0x3000; r++ {
		all.WriteRune(r)
	}
	for _, in := range []string{Hostile, all.String(), "\xff\xfe\x80\x9b"} {
		for name, f := range map[string]func(string) string{"Escape": termtext.Escape, "Block": termtext.Block} {
			out := f(in)
			if !utf8.ValidString(out) {
				t.Errorf("%s: not UTF-8: %q", name, out)
			}
			if termtext.Block(out) != out {
				t.Errorf("%s left a control Block escapes: %q", name, out)
			}
			if strings.ContainsRune(out, 0x1b) || (name == "Escape" && strings.ContainsAny(out, "\n\r\t")) {
				t.Errorf("%s left a control: %q", name, out)
			}
			if again := f(out); again != out {
				t.Errorf("%s is not idempotent: %q then %q", name, out, again)
			}
		}
	}
}

func TestWriter(t *testing.T) {
	var buf bytes.Buffer
	w := termtext.NewWriter(&buf)
	if termtext.NewWriter(w) != w {
		t.Error("a Writer wrapped twice")
	}
	n, err := w.Write([]byte("NAME\tREADY\n" + Hostile + "\n"))
	if err != nil || n != len("NAME\tREADY\n"+Hostile+"\n") {
		t.Fatalf("Write = %d, %v", n, err)
	}
	got := buf.String()
	if !strings.HasPrefix(got, "NAME\tREADY\n") || strings.ContainsAny(got, "\x1b\r\a\b") || strings.Contains(got, "\u202e") {
		t.Errorf("written: %q", got)
	}
}
