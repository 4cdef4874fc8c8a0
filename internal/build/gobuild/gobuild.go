// Package gobuild is the one way the project's shipped binaries are built (make images, make
// release): static (CGO_ENABLED=0), for a given OS and architecture, stamped with the commit
// (the version is compiled in: internal/version), and reproducible — the same source and Go
// toolchain give the same bytes wherever the tree is and whatever the build cache holds: no
// file paths (-trimpath), no build ID (-buildid=), no VCS stamp (-buildvcs=false), symbols and
// DWARF stripped (-s -w), and the architectures' baseline levels whatever the caller's
// environment says (GOAMD64=v1, GOARM64=v8.0).
package gobuild

import (
	"context"
	"fmt"
	"os"
	"os/exec"
)

// Target is an operating system and architecture, as GOOS and GOARCH name them.
type Target struct {
	OS, Arch string
}

func (t Target) String() string { return t.OS + "/" + t.Arch }

// CommitVar is the variable the commit is stamped into.
const CommitVar = "github.com/score-orchestrator/score-orchestrator/internal/version.Commit"

// Build is one go build of a command.
type Build struct {
	// Dir is the module's directory, where go build runs.
	Dir string
	// Package is the command's package, relative to Dir ("./cmd/scorectl") or an import path
	// (a tool of go.mod).
	Package string
	Target  Target
	// Commit is stamped into CommitVar; empty, nothing is stamped (a tool's build).
	Commit string
	// Env is added to the environment (GOCACHE=..., for example).
	Env []string
}

// Args are the go command's arguments that build b to out.
func (b Build) Args(out string) []string {
	ldflags := "-s -w -buildid="
	if b.Commit != "" {
		ldflags += " -X " + CommitVar + "=" + b.Commit
	}
	return []string{"build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags, "-o", out, b.Package}
}

// Environ is the environment go build runs with: the caller's, then what makes the output
// depend on the source alone.
func (b Build) Environ() []string {
	env := append(os.Environ(), "CGO_ENABLED=0", "GOOS="+b.Target.OS, "GOARCH="+b.Target.Arch,
		"GOFLAGS=", "GOAMD64=v1", "GOARM64=v8.0", "GOEXPERIMENT=")
	return append(env, b.Env...)
}

// Run builds b to out.
func (b Build) Run(ctx context.Context, out string) error {
	cmd := exec.CommandContext(ctx, "go", b.Args(out)...)
	cmd.Dir = b.Dir
	cmd.Env = b.Environ()
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s for %s: %w\n%s", b.Package, b.Target, err, msg)
	}
	return nil
}
