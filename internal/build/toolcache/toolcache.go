// Package toolcache locates the project's cache (hack/tools.sh's), outside any clone, where what
// is built once is kept for every later run: the cluster's binaries, the previous release's
// tree, the Docker hosts' images.
package toolcache

import (
	"os"
	"path/filepath"
)

// Dir is $SCORE_TOOLS_CACHE, else $XDG_CACHE_HOME/score-orchestrator, else
// ~/.cache/score-orchestrator.
func Dir() (string, error) {
	if dir := os.Getenv("SCORE_TOOLS_CACHE"); dir != "" {
		return dir, nil
	}
	if dir := os.Getenv("XDG_CACHE_HOME"); dir != "" {
		return filepath.Join(dir, "score-orchestrator"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".cache", "score-orchestrator"), nil
}
