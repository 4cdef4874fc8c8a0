// Package version is the release and commit a binary was built from. The release is the
// repository's VERSION file, compiled in (scoreorchestrator.Version), so that every build of a
// tree says the same; the commit is stamped by the linker:
//
//	go build -ldflags "-X github.com/score-orchestrator/score-orchestrator/internal/version.Commit=$(git rev-parse HEAD)"
//
// make build, make images and make release stamp it. Without the stamp, the commit the go
// command recorded (a build inside a git clone without -buildvcs=false) is used, else "unknown".
package version

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	scoreorchestrator "github.com/score-orchestrator/score-orchestrator"
)

// Version is the release (VERSION, for example "0.2.0").
var Version = strings.TrimSpace(scoreorchestrator.Version)

// Commit is the source commit. Only a constant initialiser can be replaced by -X, so the
// commit the go command recorded is looked up at start-up, in init, when there is no stamp.
var Commit = "unknown"

func init() {
	if Commit != "unknown" {
		return
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		Commit = fromBuildInfo(info.Settings)
	}
}

// fromBuildInfo is the commit the go command recorded (vcs.revision, "-dirty" when
// vcs.modified), or "unknown".
func fromBuildInfo(settings []debug.BuildSetting) string {
	var revision, modified string
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	switch {
	case revision == "":
		return "unknown"
	case modified == "true":
		return revision + "-dirty"
	default:
		return revision
	}
}

// String is how the binaries print it: "VERSION (commit COMMIT)".
func String() string {
	return fmt.Sprintf("%s (commit %s)", Version, Commit)
}

// Read is the version of the tree at root: its file VERSION, which the binaries built from it
// report.
func Read(root string) (string, error) {
	data, err := os.ReadFile(filepath.Join(root, "VERSION"))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(data)), nil
}

// Check refuses to label what is built from the tree at root as any version but its own.
func Check(root, want string) error {
	got, err := Read(root)
	if err != nil {
		return err
	}
	if want != got {
		return fmt.Errorf("version %q: the binaries built from %s report %q, its file VERSION (change VERSION, run make generate and commit, then build)", want, root, got)
	}
	return nil
}
