package scoreorchestrator_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedFilesAreFresh regenerates the CRDs, the controllers' RBAC roles and the
// deep-copy functions into a scratch directory and fails when the committed ones differ: run
// `make generate` and commit.
func TestGeneratedFilesAreFresh(t *testing.T) {
	out := t.TempDir()
	crdDir := filepath.Join(out, "crd")
	run(t, "go", "tool", "controller-gen", "crd", "paths=./api/...", "output:crd:artifacts:config="+crdDir)
	compareDir(t, "config/crd/bases", crdDir)
	// Each controller's role is generated from its own package, named as the role.
	for _, name := range []string{"orchestrator", "provisioner", "runtime"} {
		dir := filepath.Join(out, "rbac", name)
		run(t, "go", "tool", "controller-gen", "rbac:roleName=score-"+name, "paths=./internal/controller/"+name+"/...", "output:rbac:artifacts:config="+dir)
		compareDir(t, filepath.Join("config", "rbac", name), dir)
	}

	// controller-gen writes deep-copy code beside its package, so generate a copy of the
	// package inside the module (a directory go's wildcards skip) and compare.
	scratch, err := os.MkdirTemp(".", "_gencheck")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(scratch) })
	sources, err := filepath.Glob("api/v1b1/*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range sources {
		if strings.HasPrefix(filepath.Base(f), "zz_generated") || strings.HasSuffix(f, "_test.go") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(scratch, filepath.Base(f)), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	run(t, "go", "tool", "controller-gen", "object", "paths=./"+filepath.Base(scratch))
	compareFile(t, "api/v1b1/zz_generated.deepcopy.go", filepath.Join(scratch, "zz_generated.deepcopy.go"))
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

func compareDir(t *testing.T, committed, fresh string) {
	t.Helper()
	entries, err := os.ReadDir(fresh)
	if err != nil {
		t.Fatal(err)
	}
	committedEntries, err := os.ReadDir(committed)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(committedEntries) {
		t.Errorf("%s holds %d files, generation gives %d: run make generate", committed, len(committedEntries), len(entries))
	}
	for _, e := range entries {
		compareFile(t, filepath.Join(committed, e.Name()), filepath.Join(fresh, e.Name()))
	}
}

func compareFile(t *testing.T, committed, fresh string) {
	t.Helper()
	want, err := os.ReadFile(fresh)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(committed)
	if err != nil {
		t.Fatalf("%v: run make generate", err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s is stale: run make generate and commit the result", committed)
	}
}
