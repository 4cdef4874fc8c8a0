// Package cligc lets the garbage collector run less often while a command-line process
// starts: imported by a main package, it sets GOGC to 400 (unless the user set GOGC) before the
// heavy package initialisers of the libraries run. With the default of 100, the collector
// ran several times during scorectl's start (the JSON-schema compilers of the Helm SDK and
// of score-go, client-go's scheme: about 8 MB allocated before main), about a sixth of the
// start time. A short-lived command's heap stays small; a long-running process started from
// the same binary (scorectl dev controllers) calls Restore first.
//
// The package imports only the standard library, and the Go specification initialises, of the
// packages whose imports are initialised, the first by import path: this one comes before
// every library that sorts after it or imports one that does (golang.org/x/..., k8s.io/...,
// sigs.k8s.io/..., google.golang.org/protobuf and all that builds on it).
package cligc

import (
	"os"
	"runtime/debug"
)

// Percent is the GOGC value a command runs with.
const Percent = 400

func init() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(Percent)
	}
}

// Restore gives a long-running process the collector's default (or the user's GOGC).
func Restore() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(100)
	}
}
