// Package termtest is what the tests of every printing path share for terminal escapes: a
// message full of them, as a tenant's param can carry, and the check that an output holds none.
package termtest

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/score-orchestrator/score-orchestrator/internal/termtext"
)

// Hostile is a message full of terminal escapes: a window title (OSC, ended by BEL), a cleared
// screen (CSI), a carriage return and a fake green line, a backspace, an 8-bit CSI raw and as
// a C1 character, a right-to-left override and an isolate, and a line break to a fake line.
const Hostile = "ok\x1b]0;pwned\x07\x1b[2J\r\x1b[32mReady: True\x1b[0m\b\x9b31m\u009b1m\u202edesrever\u2066x\u2069\nBlocking: nothing"

// Marker is a piece of Hostile that shows, escaped, wherever the message was printed.
const Marker = `\x1b]0;pwned`

// Safe fails the test when out holds a character a terminal acts on other than the line
// feeds and tabs of its layout, or when the hostile message's fake line starts a line of its
// own.
func Safe(t testing.TB, what, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Errorf("%s: the output is not UTF-8: %q", what, out)
	}
	if escaped := termtext.Block(out); escaped != out {
		t.Errorf("%s: the output holds terminal controls:\n%q", what, out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "Blocking: nothing") {
			t.Errorf("%s: the hostile message's line break made a line of its own:\n%s", what, out)
		}
	}
}
