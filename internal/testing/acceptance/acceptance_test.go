package acceptance

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/score-orchestrator/score-orchestrator/internal/testing/conformance"
)

// docs/acceptance.md says what the code does with every Score file of the corpus: its scorectl
// column is rendered again here and must be the page's (make acceptance rewrites the page).
func TestAcceptancePageIsCurrent(t *testing.T) {
	conformance.Require(t)
	page, err := Page(context.Background(), "../../..")
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile("../../../docs/acceptance.md")
	if err != nil {
		t.Fatal(err)
	}
	if page != string(committed) {
		t.Fatalf("docs/acceptance.md is stale: run make acceptance and commit it\n%s", firstDifference(page, string(committed)))
	}
}

func firstDifference(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range al {
		if i >= len(bl) || al[i] != bl[i] {
			other := ""
			if i < len(bl) {
				other = bl[i]
			}
			return "now:       " + al[i] + "\ncommitted: " + other
		}
	}
	return "the committed page is longer"
}

func TestApps(t *testing.T) {
	files := []string{
		"score/examples/samples__shop__a__score.yaml",
		"score/examples/samples__shop__b__score.yaml",
		"score/score-compose/examples__04-multiple-workloads__score.yaml",
		"score/score-compose/examples__04-multiple-workloads__score2.yaml",
		"provisioners/community-provisioners/service__x.provisioners__score-backend.yaml",
		"score/spec/samples__alone.yaml",
	}
	var got []string
	for _, app := range Apps(t.TempDir(), files) {
		got = append(got, app.Name+"="+strings.Join(app.Files, ","))
	}
	want := []string{
		"samples/shop=" + files[0] + "," + files[1],
		"score-compose/04-multiple-workloads=" + files[2] + "," + files[3],
		"community/service__x=" + files[4],
		"score/spec/samples__alone=" + files[5],
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("apps:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The page says the same wherever the corpus is checked out (CI's clone is not this machine's).
func TestPageDoesNotNameWhereTheCorpusIs(t *testing.T) {
	conformance.Require(t)
	dir, err := conformance.Dir()
	if err != nil {
		t.Fatal(err)
	}
	here, err := Page(context.Background(), "../../..")
	if err != nil {
		t.Fatal(err)
	}
	elsewhere := filepath.Join(t.TempDir(), "conformance")
	if err := os.Symlink(dir, elsewhere); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SCORE_CONFORMANCE_DIR", elsewhere)
	there, err := Page(context.Background(), "../../..")
	if err != nil {
		t.Fatal(err)
	}
	if here != there {
		t.Fatalf("the page depends on where the corpus is:\n%s", firstDifference(there, here))
	}
}

// make acceptance passes score-k8s as bin/score-k8s, relative to the repository, while each app
// runs in a directory of its own. A stand-in binary records the arguments it was run with.
func TestRunScoreK8sTakesARelativeBinary(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\nif [ \"$1\" = generate ]; then echo \"Error: no image in $4\"; exit 1; fi\n"
	if err := os.WriteFile(filepath.Join(dir, "bin", "score-k8s"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	corpus := filepath.Join(dir, "corpus")
	if err := os.MkdirAll(filepath.Join(corpus, "score", "spec"), 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join("score", "spec", "samples__one.yaml")
	if err := os.WriteFile(filepath.Join(corpus, file), []byte("apiVersion: score.dev/v1b1\nmetadata: {name: one}\ncontainers: {main: {image: nginx}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	got, err := RunScoreK8s(context.Background(), "bin/score-k8s", corpus, []string{file})
	if err != nil {
		t.Fatal(err)
	}
	want := "✗ Error: no image in ../shared/conformance/score/spec/samples__one.yaml"
	if got["score/spec/samples__one"] != want {
		t.Fatalf("outcomes %v, want %q", got, want)
	}
}
