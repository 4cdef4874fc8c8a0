// Package termtext makes text from the cluster safe to print on a terminal and to show in a
// browser. Messages carry what tenants wrote (params, names, a container's termination
// message); printed raw, a control character in one is an instruction to the terminal of
// whoever reads it: ESC starts a sequence that retitles the window, clears the screen or colours
// a fake line, a carriage return or backspace writes over what came before, BEL rings, and a
// Unicode bidi override reverses what follows on screen and in a web page alike. Escape turns
// each into a visible escape (ESC is \x1b, RLO is \u202e); everything else, backslashes
// included, is left as it is, so text without controls is unchanged and escaping twice is
// escaping once.
//
// It is the one home of that escaping: the controllers store their messages and events
// escaped, and scorectl and the dashboard escape what they read (other programs' words too)
// before they print or show it.
package termtext

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Escape returns s with every control character escaped: C0 (tab, line feed and carriage
// return included, so that a message stays on its line), DEL, C1, the Unicode bidi and other
// invisible directional marks, the line and paragraph separators, and each byte that is not
// UTF-8 (a lone 0x9b is CSI to a terminal that reads 8-bit controls).
func Escape(s string) string { return escape(s, false) }

// Block is Escape for text the program lays out in lines: tabs and line feeds are kept.
func Block(s string) string { return escape(s, true) }

func escape(s string, layout bool) string {
	i := firstUnsafe(s, layout)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for rest := s[i:]; rest != ""; {
		r, size := utf8.DecodeRuneInString(rest)
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, rest[0])
		case !unsafe(r, layout):
			b.WriteString(rest[:size])
		case r < 0x80:
			b.WriteString(ascii(byte(r)))
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		rest = rest[size:]
	}
	return b.String()
}

// ascii is the escape of a C0 character or DEL: the usual letter where C has one.
func ascii(c byte) string {
	switch c {
	case '\a':
		return `\a`
	case '\b':
		return `\b`
	case '\t':
		return `\t`
	case '\n':
		return `\n`
	case '\v':
		return `\v`
	case '\f':
		return `\f`
	case '\r':
		return `\r`
	}
	return fmt.Sprintf(`\x%02x`, c)
}

// unsafe reports whether r is escaped; with layout, tab and line feed are not.
func unsafe(r rune, layout bool) bool {
	switch {
	case layout && (r == '\t' || r == '\n'):
		return false
	case r < 0x20 || r == 0x7f: // C0, DEL
		return true
	case r >= 0x80 && r <= 0x9f: // C1: CSI (0x9b), OSC (0x9d), ...
		return true
	}
	return directional(r)
}

// firstUnsafe is the index of the first character of s to escape (a byte that is not UTF-8
// among them), -1 when there is none.
func firstUnsafe(s string, layout bool) int {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || unsafe(r, layout) {
			return i
		}
		i += size
	}
	return -1
}

// directional reports the invisible characters that change the order or direction text is
// shown in (the Trojan Source set), and the separators some terminals break lines at.
func directional(r rune) bool {
	switch {
	case r == 0x061c: // ARABIC LETTER MARK
		return true
	case r == 0x200e || r == 0x200f: // LRM, RLM
		return true
	case r >= 0x202a && r <= 0x202e: // LRE, RLE, PDF, LRO, RLO
		return true
	case r >= 0x2066 && r <= 0x2069: // LRI, RLI, FSI, PDI
		return true
	case r == 0x2028 || r == 0x2029: // LINE SEPARATOR, PARAGRAPH SEPARATOR
		return true
	}
	return false
}

// Writer escapes, as Block does, everything written to it before it reaches w: the backstop
// for a program's output, whose own lines and columns pass. Each Write is escaped on its own,
// so a character split across two writes shows as its bytes.
type Writer struct{ w io.Writer }

// NewWriter returns a Writer to w; w itself when it already is one.
func NewWriter(w io.Writer) io.Writer {
	if _, ok := w.(*Writer); ok {
		return w
	}
	return &Writer{w: w}
}

// Write escapes p and writes it; it reports len(p) when the escaped text was written whole.
func (t *Writer) Write(p []byte) (int, error) {
	s := string(p)
	escaped := Block(s)
	if _, err := io.WriteString(t.w, escaped); err != nil {
		return 0, err
	}
	return len(p), nil
}
