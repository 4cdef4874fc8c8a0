package acceptance

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/score-orchestrator/score-orchestrator/internal/conformance"
)

// docs/acceptance.md says what the code does with every Score file of the corpus: its scorectl
// column is rendered again here and must be the page's (make acceptance rewrites the page).
func TestAcceptancePageIsCurrent(t *testing.T) {
	conformance.Require(t)
	page, err := Page(context.Background(), "../..")
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile("../../docs/acceptance.md")
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
