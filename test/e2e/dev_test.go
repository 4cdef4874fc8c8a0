package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// `scorectl dev up` on a machine with the binary only (run outside the repository, with
// nothing but what the binary carries): a simulated cluster of its own, its Gateway Programmed
// by the gateway controller, the examples Ready and their endpoints printed. Up again is safe
// and replaces the controllers and the gateway controller; down leaves no controller, no
// gateway controller and no cluster behind.
func TestDevUpDown(t *testing.T) {
	bin := buildScorectl(t)
	dir := t.TempDir()
	dev := func(args ...string) (string, error) {
		cmd := exec.Command(bin, append([]string{"dev"}, append(args, "--dir", dir)...)...)
		cmd.Dir = t.TempDir()
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	up := []string{"up", "--metrics-bind-address=0", "--health-probe-bind-address=0", "--timeout=3m"}
	t.Cleanup(func() { _, _ = dev("down") })

	out, err := dev(up...)
	if err != nil {
		t.Fatalf("dev up: %v\n%s", err, out)
	}
	for _, want := range []string{"5/5 Ready", "hello: http://hello.score-demo.svc.cluster.local:80", "orders: http://orders.score-demo.svc.cluster.local:80", "nightly-report: (no service)", "storefront: http://storefront.score-demo.svc.cluster.local:80", "ledger: http://ledger.score-demo.svc.cluster.local:80", "scorectl dev down --dir " + dir} {
		if !strings.Contains(out, want) {
			t.Fatalf("dev up does not print %q:\n%s", want, out)
		}
	}
	if !strings.Contains(out, "the Gateway is Programmed") {
		t.Fatalf("dev up does not wait for the Gateway:\n%s", out)
	}
	first, firstGateway := pidIn(t, dir, "score-controllers.pid"), pidIn(t, dir, "gateway.pid")
	if !running(firstGateway) {
		t.Fatalf("the gateway controller (pid %d) does not run after up", firstGateway)
	}

	if out, err = dev(up...); err != nil || !strings.Contains(out, "is already up") || !strings.Contains(out, "5/5 Ready") {
		t.Fatalf("dev up again: %v\n%s", err, out)
	}
	second, secondGateway := pidIn(t, dir, "score-controllers.pid"), pidIn(t, dir, "gateway.pid")
	if second == first || running(first) || !running(second) {
		t.Fatalf("up again must replace the controllers: first pid %d (running %v), second pid %d (running %v)", first, running(first), second, running(second))
	}
	if secondGateway == firstGateway || running(firstGateway) || !running(secondGateway) {
		t.Fatalf("up again must replace the gateway controller: first pid %d (running %v), second pid %d (running %v)", firstGateway, running(firstGateway), secondGateway, running(secondGateway))
	}

	if out, err = dev("down"); err != nil || !strings.Contains(out, "deleting cluster") || !strings.Contains(out, "stopped the gateway controller") {
		t.Fatalf("dev down: %v\n%s", err, out)
	}
	if running(second) {
		t.Fatalf("the controllers (pid %d) still run after down", second)
	}
	if running(secondGateway) {
		t.Fatalf("the gateway controller (pid %d) still runs after down", secondGateway)
	}
	if _, err := os.Stat(filepath.Join(dir, "kubeconfig")); !os.IsNotExist(err) {
		t.Fatalf("the kubeconfig outlives down: %v", err)
	}
	if out, err = dev("down"); err != nil {
		t.Fatalf("dev down again: %v\n%s", err, out)
	}
}

// pidIn is the pid the pid file name of dir holds.
func pidIn(t *testing.T, dir, name string) int {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// running reports whether pid is a live process (a process that exited has no command line).
func running(pid int) bool {
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return err == nil && len(cmdline) > 0
}
