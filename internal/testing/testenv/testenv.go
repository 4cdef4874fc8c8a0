// Package testenv starts a real kube-apiserver and etcd (controller-runtime's envtest) with
// the score.dev CRDs installed, for integration tests. The binaries are the ones
// hack/tools.sh builds from source and links into ./bin; KUBEBUILDER_ASSETS overrides them.
//
// It is also the one home of what the integration and end-to-end tests share: running a
// package's tests and its controllers (Main, ManagerOptions), building Workloads (Workload and
// its options), and waiting for the controllers' answers (Eventually, WaitForCondition,
// WaitGone). Only tests import it.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/score-orchestrator/score-orchestrator/internal/scheme"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
)

// RepoRoot is the repository's root directory.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// BuildCommand builds the repository's cmd/<name> into dir and returns the binary's path.
func BuildCommand(dir, name string) (string, error) {
	bin := filepath.Join(dir, name)
	if out, err := exec.Command("go", "build", "-o", bin, filepath.Join(RepoRoot(), "cmd", name)).CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s: %v\n%s", name, err, out)
	}
	return bin, nil
}

// Scheme holds the built-in kinds, CRDs and the score.dev kinds.
func Scheme() *k8sruntime.Scheme { return scheme.New() }

// Env is a running API server with the CRDs installed.
type Env struct {
	Config *rest.Config
	Client client.Client
	env    *envtest.Environment
}

// Start starts etcd and kube-apiserver and installs the CRDs from config/crd/bases.
func Start() (*Env, error) { return start("") }

// StartAudited is Start with the API server's audit log of every write (hack/audit-writes.yaml:
// metadata, no reads) at auditLog, which controllerproc.ReadAudit reads: a test counts the
// controllers' writes there, and their answers.
func StartAudited(auditLog string) (*Env, error) { return start(auditLog) }

func start(auditLog string) (*Env, error) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join(RepoRoot(), "bin")
	}
	if _, err := os.Stat(filepath.Join(assets, "kube-apiserver")); err != nil {
		return nil, fmt.Errorf("no kube-apiserver in %s: run `make tools` (it builds the binaries from source) or set KUBEBUILDER_ASSETS", assets)
	}
	e := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(RepoRoot(), "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
	}
	if auditLog != "" {
		e.ControlPlane.GetAPIServer().Configure().
			Set("audit-policy-file", filepath.Join(RepoRoot(), "hack", "audit-writes.yaml")).
			Set("audit-log-path", auditLog).
			Set("audit-log-mode", "blocking")
	}
	cfg, err := e.Start()
	if err != nil {
		return nil, fmt.Errorf("starting the API server: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: Scheme()})
	if err != nil {
		_ = e.Stop()
		return nil, err
	}
	return &Env{Config: cfg, Client: c, env: e}, nil
}

// Stop stops the API server and etcd.
func (e *Env) Stop() error {
	return e.env.Stop()
}

// StopEtcd stops etcd alone: the API server still answers what needs no storage (its
// version, the probe of a member cluster), and no read or write that reaches etcd.
func (e *Env) StopEtcd() error {
	return e.env.ControlPlane.Etcd.Stop()
}

// Eventually calls check until it returns nil or timeout passes, then fails the test with
// what and the last error. Polling is how a test waits; the controllers themselves never poll.
func Eventually(t testing.TB, timeout time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for time.Now().Before(deadline) {
		if err = check(); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: %v", what, err)
}
