// Package previousrelease is the release platform teams run before this commit, as the clone's
// own history holds it: hack/previous-release names its commit, and the tests read its files
// (Show) and build its binaries (Checkout, then Build) from there, cached by commit under the
// project's cache (as hack/tools.sh caches the cluster binaries), so that a rerun, or another
// clone on the same machine, reuses them. test/upgrade installs it and upgrades it to this
// commit; internal/build/crdcompat compares its CRDs with this commit's.
//
// Only tests import it.
package previousrelease

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/score-orchestrator/score-orchestrator/internal/build/toolcache"
)

// File is where the repository names the previous release, relative to its root.
const File = "hack/previous-release"

// ErrNotInClone is a previous release this clone's history does not hold.
var ErrNotInClone = errors.New("the previous release is not in this clone's history")

// Release is the previous release's source tree, extracted from the clone's history.
type Release struct {
	// Commit is its full commit hash.
	Commit string
	// Dir is its source tree, in the cache; read it, never write it.
	Dir string
	// cache is the directory of the commit's cached tree and binaries.
	cache string
}

// fullHash is a commit as hack/previous-release must name it.
var fullHash = regexp.MustCompile(`^[0-9a-f]{40}$`)

// Commit is the commit hack/previous-release names in the repository at root: its one line
// that is neither empty nor a comment (#), a full hash.
func Commit(root string) (string, error) {
	f, err := os.Open(filepath.Join(root, File))
	if err != nil {
		return "", err
	}
	defer f.Close()
	var commits []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line != "" && !strings.HasPrefix(line, "#") {
			commits = append(commits, line)
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	if len(commits) != 1 || !fullHash.MatchString(commits[0]) {
		return "", fmt.Errorf("%s must name one commit, by its full hash (40 hex digits), on a line of its own: found %q", File, commits)
	}
	return commits[0], nil
}

// Present checks that the clone at root holds commit, and says what to do when it does not:
// a shallow clone (CI's, often) lacks the history, a clone of a fork may lack the commit.
func Present(root, commit string) error {
	if _, err := git(root, "rev-parse", "--git-dir"); err != nil {
		return fmt.Errorf("%w: %s is not a git clone (%v); the previous release (%s, named by %s) is read from the clone's history", ErrNotInClone, root, err, commit, File)
	}
	holds := func() bool { _, err := git(root, "cat-file", "-e", commit+"^{commit}"); return err == nil }
	if holds() {
		return nil
	}
	hint := "fetch it (git fetch origin) or move " + File + " to a commit this clone holds"
	fetch := []string{"fetch", "--quiet", "origin"}
	if out, err := git(root, "rev-parse", "--is-shallow-repository"); err == nil && strings.TrimSpace(out) == "true" {
		hint = "this is a shallow clone: run `git fetch --unshallow` (CI must clone with the history, e.g. actions/checkout's fetch-depth: 0)"
		fetch = []string{"fetch", "--quiet", "--unshallow", "origin"}
	}
	// What the hint says, tried once where the clone has an origin to fetch from: a shallow
	// CI clone then needs nothing of whoever runs the tests.
	if _, err := git(root, "remote", "get-url", "origin"); err == nil {
		if _, err := git(root, fetch...); err == nil && holds() {
			return nil
		}
	}
	return fmt.Errorf("%w: commit %s (named by %s) is missing: %s", ErrNotInClone, commit, File, hint)
}

// presentCommit is the previous release's commit (Commit), made present in the clone first
// (Present).
func presentCommit(root string) (string, error) {
	commit, err := Commit(root)
	if err != nil {
		return "", err
	}
	if err := Present(root, commit); err != nil {
		return "", err
	}
	return commit, nil
}

// Show is the file at path (relative to the repository's root) as the previous release has it.
func Show(root, path string) ([]byte, error) {
	commit, err := presentCommit(root)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("git", "show", commit+":"+path)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git show %s:%s: %v: %s", commit[:7], path, err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// List is the paths (relative to the repository's root) of the previous release's files
// under dir.
func List(root, dir string) ([]string, error) {
	commit, err := presentCommit(root)
	if err != nil {
		return nil, err
	}
	out, err := git(root, "ls-tree", "-r", "--name-only", commit, "--", dir)
	if err != nil {
		return nil, err
	}
	return strings.Fields(out), nil
}

// Checkout is the previous release's source tree, extracted from the clone at root with git
// archive into the cache the first time (a commit's tree never changes, so it is never
// extracted again). Two processes extracting at once each extract into a directory of their
// own and rename it into place: one wins, the other's is dropped.
func Checkout(root string) (*Release, error) {
	commit, err := presentCommit(root)
	if err != nil {
		return nil, err
	}
	cacheRoot, err := toolcache.Dir()
	if err != nil {
		return nil, err
	}
	r := &Release{Commit: commit, cache: filepath.Join(cacheRoot, "previous-release", commit)}
	r.Dir = filepath.Join(r.cache, "src")
	if _, err := os.Stat(filepath.Join(r.Dir, "go.mod")); err == nil {
		return r, nil
	}
	if err := os.MkdirAll(r.cache, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(r.cache, "src-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp) // once renamed, nothing is left there
	if err := extract(root, commit, tmp); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, r.Dir); err != nil {
		if _, statErr := os.Stat(filepath.Join(r.Dir, "go.mod")); statErr == nil {
			return r, nil // another process put it there first
		}
		return nil, err
	}
	return r, nil
}

// extract writes commit's tree into dir: git archive, read by tar.
func extract(root, commit, dir string) error {
	archive := exec.Command("git", "archive", "--format=tar", commit)
	archive.Dir = root
	untar := exec.Command("tar", "-x", "-C", dir)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return err
	}
	var archiveErr, untarErr bytes.Buffer
	archive.Stderr, untar.Stdin, untar.Stderr = &archiveErr, pipe, &untarErr
	if err := untar.Start(); err != nil {
		return err
	}
	if err := archive.Run(); err != nil {
		_ = untar.Wait()
		return fmt.Errorf("git archive %s: %v: %s", commit[:7], err, strings.TrimSpace(archiveErr.String()))
	}
	if err := untar.Wait(); err != nil {
		return fmt.Errorf("extracting %s: %v: %s", commit[:7], err, strings.TrimSpace(untarErr.String()))
	}
	return nil
}

// Build builds the previous release's cmd/<name> (stamped with its commit) and returns the
// binary's path, in the cache: built once per commit, reused after. The Go build cache makes
// the first build share whatever this commit's build already compiled.
func (r *Release) Build(name string) (string, error) {
	bin := filepath.Join(r.cache, "bin", name)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return "", err
	}
	// Built into a directory of its own and renamed into place, as Checkout's tree.
	tmp, err := os.MkdirTemp(filepath.Dir(bin), name+"-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	built := filepath.Join(tmp, name)
	ldflags := "-X github.com/score-orchestrator/score-orchestrator/internal/version.Commit=" + r.Commit
	cmd := exec.Command("go", "build", "-ldflags", ldflags, "-o", built, "./cmd/"+name)
	cmd.Dir = r.Dir
	// Its own module, outside any workspace; no VCS stamp (the tree has no .git).
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the previous release's %s (%s): %v\n%s", name, r.Commit[:7], err, out)
	}
	if err := os.Rename(built, bin); err != nil {
		return "", err
	}
	return bin, nil
}

// git runs git in dir and returns its output.
func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}
