// Package version is the release and commit a binary was built from, stamped by the linker:
//
//	go build -ldflags "-X github.com/score-orchestrator/score-orchestrator/internal/version.Version=v0.2.0
//	  -X github.com/score-orchestrator/score-orchestrator/internal/version.Commit=$(git rev-parse HEAD)"
//
// make images stamps both; a plain go build leaves them "dev" and "unknown".
package version

import "fmt"

// Version is the release, Commit the source commit.
var (
	Version = "dev"
	Commit  = "unknown"
)

// String is how the binaries print it: "VERSION (commit COMMIT)".
func String() string {
	return fmt.Sprintf("%s (commit %s)", Version, Commit)
}
