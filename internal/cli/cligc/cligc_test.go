package cligc

import (
	"os"
	"runtime/debug"
	"testing"
)

// The package's initialiser has run by the time a test runs: the collector is at Percent
// unless the user set GOGC, and Restore gives the default back.
func TestStartAndRestore(t *testing.T) {
	if os.Getenv("GOGC") != "" {
		t.Skip("GOGC is set: the user's setting stands")
	}
	if got := debug.SetGCPercent(Percent); got != Percent {
		t.Fatalf("GOGC at start is %d, want %d", got, Percent)
	}
	Restore()
	if got := debug.SetGCPercent(Percent); got != 100 {
		t.Fatalf("GOGC after Restore is %d, want 100", got)
	}
}
