// Package conformance locates the third-party Score and provisioner files the product must
// handle (../shared/conformance beside the repository, or $SCORE_CONFORMANCE_DIR).
package conformance

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
)

// Dir returns the conformance corpus directory.
func Dir() (string, error) {
	d := os.Getenv("SCORE_CONFORMANCE_DIR")
	if d == "" {
		_, file, _, _ := runtime.Caller(0)
		d = filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "shared", "conformance")
	}
	if _, err := os.Stat(d); err != nil {
		return "", fmt.Errorf("the conformance corpus is not at %s (set SCORE_CONFORMANCE_DIR): %w", d, err)
	}
	return d, nil
}

// ScoreFiles returns every Score file of the corpus: those under score/ and the Score files
// paired with community provisioners, sorted.
func ScoreFiles() ([]string, error) {
	d, err := Dir()
	if err != nil {
		return nil, err
	}
	var out []string
	// The separator makes the walk follow a corpus that is a symbolic link.
	err = filepath.WalkDir(d+string(filepath.Separator), func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.HasSuffix(p, ".yaml") {
			return err
		}
		rel, _ := filepath.Rel(d, p)
		if strings.HasPrefix(rel, "score"+string(filepath.Separator)) || strings.Contains(filepath.Base(p), ".provisioners__score") {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// ProvisionerFiles returns every provisioner file of the corpus, sorted.
func ProvisionerFiles() ([]string, error) {
	d, err := Dir()
	if err != nil {
		return nil, err
	}
	all, err := filepath.Glob(filepath.Join(d, "provisioners", "*", "*.yaml"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range all {
		if !strings.Contains(filepath.Base(p), ".provisioners__score") {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out, nil
}

// ComposeProvisionerFiles returns the provisioner files of score-compose in the corpus
// (compose-provisioners/), sorted.
func ComposeProvisionerFiles() ([]string, error) {
	d, err := Dir()
	if err != nil {
		return nil, err
	}
	out, err := filepath.Glob(filepath.Join(d, "compose-provisioners", "*", "*.yaml"))
	sort.Strings(out)
	return out, err
}

// RequiredEnv, set to any value (.ci/run sets it), makes a missing corpus fail the tests that
// need it instead of skipping them.
const RequiredEnv = "SCORE_CONFORMANCE_REQUIRED"

// Require returns the corpus directory for a test that needs it. Without the corpus the test is
// skipped, saying so and how to run it (or fails, under RequiredEnv): a clone tests on its own.
func Require(tb testing.TB) string {
	tb.Helper()
	d, err := Dir()
	if err == nil {
		return d
	}
	msg := fmt.Sprintf("%v; this test needs the conformance corpus: run it with SCORE_CONFORMANCE_DIR=/path/to/conformance", err)
	if os.Getenv(RequiredEnv) != "" {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
	return ""
}
