package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// buildScorectl builds the command line into a directory of the test's own.
func buildScorectl(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "scorectl")
	build := exec.Command("go", "build", "-o", bin, "./cmd/scorectl")
	build.Dir = testenv.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building scorectl: %v\n%s", err, out)
	}
	return bin
}

// scorectl runs the command line against the test cluster.
func scorectl(t *testing.T) func(args ...string) (string, error) {
	t.Helper()
	bin := buildScorectl(t)
	return func(args ...string) (string, error) {
		cmd := exec.Command(bin, append(args, "--kubeconfig", kubeconfig)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
}

// A newcomer's journey with scorectl: apply and wait, status, why, delete, and a failing apply.
func TestScorectl(t *testing.T) {
	run := scorectl(t)
	ns := "e2e-cli"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	hello := filepath.Join(testenv.RepoRoot(), "examples", "hello", "score.yaml")

	out, err := run("apply", "-f", hello, "-n", ns, "--timeout", "2m")
	if err != nil || !regexp.MustCompile(`(?m)^hello +True +Succeeded +http://hello\.`+ns).MatchString(out) {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	out, err = run("status", "-n", ns)
	if err != nil || !strings.Contains(out, "hello") || !strings.Contains(out, "Succeeded") || !strings.Contains(out, "http://hello."+ns+".svc.cluster.local:80") {
		t.Fatalf("status: %v\n%s", err, out)
	}
	out, err = run("status", "hello", "-n", ns, "-o", "json")
	if err != nil || !strings.Contains(out, `"endpoint": "http://hello.`+ns) {
		t.Fatalf("status -o json: %v\n%s", err, out)
	}
	out, err = run("why", "hello", "-n", ns)
	if err != nil || !strings.Contains(out, "Profile: web-service, chosen by hint") || !strings.Contains(out, "✓ k8s-web-v2") || !strings.Contains(out, "Ready: ") {
		t.Fatalf("why: %v\n%s", err, out)
	}
	out, err = run("reconcile", "hello", "-n", ns, "--timeout", "1m")
	if err != nil || !strings.Contains(out, "workload.score.dev/hello reconciled") {
		t.Fatalf("reconcile: %v\n%s", err, out)
	}
	out, err = run("delete", "hello", "-n", ns, "--timeout", "2m")
	if err != nil || !strings.Contains(out, "workload.score.dev/hello is gone") {
		t.Fatalf("delete: %v\n%s", err, out)
	}

	bad := filepath.Join(t.TempDir(), "score.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: score.dev/v1b1\nmetadata:\n  name: needs-gpu\n  annotations:\n    score.dev/requirements: gpu\ncontainers:\n  main:\n    image: nginx\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = run("apply", "-f", bad, "-n", ns, "--timeout", "5s")
	if err == nil || !strings.Contains(out, "RuntimeSelecting") {
		t.Fatalf("an apply that cannot become Ready must fail with the reason: %v\n%s", err, out)
	}
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 1 {
		t.Fatalf("exit code: %v", err)
	}
	out, _ = run("why", "needs-gpu", "-n", ns)
	if !strings.Contains(out, `does not offer required feature "gpu"`) {
		t.Fatalf("why names the filtering constraint:\n%s", out)
	}

	// An app of two files, one depending on a type nobody serves: the wait stops at once
	// (long before the timeout) with the dependency's own message, and the table shows both.
	app := t.TempDir()
	for name, doc := range map[string]string{
		"web.yaml":    "apiVersion: score.dev/v1b1\nmetadata: {name: web}\ncontainers: {main: {image: nginx}}\nservice: {ports: {http: {port: 80}}}\nresources: {api: {type: service}}\n",
		"api.yaml":    "apiVersion: score.dev/v1b1\nmetadata: {name: api}\ncontainers: {main: {image: nginx}}\nservice: {ports: {http: {port: 8080}}}\nresources: {db: {type: postgresql}}\n",
		".hidden.yml": "not: a score file\n",
	} {
		if err := os.WriteFile(filepath.Join(app, name), []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	out, err = run("apply", "-f", app, "-n", ns, "--timeout", "3m")
	if err == nil || time.Since(start) > time.Minute || !strings.Contains(out, "api: ClaimFailed") || !strings.Contains(out, "Did you mean postgres?") || !strings.Contains(out, "WORKLOAD") {
		t.Fatalf("apply of an app with a dependency nobody serves: %v after %s\n%s", err, time.Since(start), out)
	}
	out, err = run("delete", "-f", app, "-n", ns, "--timeout", "2m")
	if err != nil || !strings.Contains(out, "workload.score.dev/web is gone") || !strings.Contains(out, "workload.score.dev/api is gone") {
		t.Fatalf("delete -f: %v\n%s", err, out)
	}
}
