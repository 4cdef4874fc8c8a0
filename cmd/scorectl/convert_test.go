package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

func execute(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	cmd := newRootCommand()
	var stdout, stderr bytes.Buffer
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return stdout.String(), stderr.String(), err
}

func TestConvertRoundTrip(t *testing.T) {
	dir := t.TempDir()
	score := filepath.Join(dir, "score.yaml")
	if err := os.WriteFile(filepath.Join(dir, "index.html"), []byte("<h1>${metadata.name}</h1>\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const doc = `apiVersion: score.dev/v1b1
metadata:
  name: hello
containers:
  web:
    image: nginx
    files:
      - target: /usr/share/nginx/html/index.html
        source: index.html
service:
  ports:
    http:
      port: 80
`
	if err := os.WriteFile(score, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := execute(t, "convert", score, "-n", "team-a")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr, "migrated to object") {
		t.Errorf("the upgrade of the deprecated files array should be reported, got %q", stderr)
	}
	var w scorev1b1.Workload
	if err := yaml.UnmarshalStrict([]byte(strings.TrimPrefix(out, "---\n")), &w); err != nil {
		t.Fatalf("output is not a Workload: %v\n%s", err, out)
	}
	if w.Namespace != "team-a" || *w.Spec.Containers["web"].Files["/usr/share/nginx/html/index.html"].Content != "<h1>${metadata.name}</h1>\n" {
		t.Fatalf("unexpected Workload %+v", w)
	}
	if strings.Contains(out, "status") || strings.Contains(out, "creationTimestamp") {
		t.Fatalf("the manifest must not carry server fields:\n%s", out)
	}

	workload := filepath.Join(dir, "workload.yaml")
	if _, _, err := execute(t, "convert", score, "-o", workload); err != nil {
		t.Fatal(err)
	}
	back, _, err := execute(t, "convert", "--reverse", workload)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"apiVersion: score.dev/v1b1", "source: index.html", "name: hello", "port: 80"} {
		if !strings.Contains(back, want) {
			t.Errorf("the reverse conversion lacks %q:\n%s", want, back)
		}
	}
}

func TestConvertRejectsInvalidScore(t *testing.T) {
	dir := t.TempDir()
	score := filepath.Join(dir, "score.yaml")
	if err := os.WriteFile(score, []byte("apiVersion: score.dev/v1b1\nmetadata: {name: x1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := execute(t, "convert", score)
	if err == nil || !strings.Contains(err.Error(), "the Score schema rejects the file") {
		t.Fatalf("want the schema's rejection, got %v", err)
	}
	if code := run([]string{"convert", score}); code != exitError {
		t.Fatalf("exit code %d, want %d", code, exitError)
	}
}
