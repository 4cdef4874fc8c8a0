package scorefile

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/conformance"
)

// FuzzScoreRoundTrip feeds any bytes through DecodeDocuments and ToWorkload. Whenever a
// document converts, FromWorkload converts the Workload back to the same Score document
// (empty collections counting as absent), and that document converts again to the same
// Workload. Seeds: every Score file of the conformance corpus and of examples/.
func FuzzScoreRoundTrip(f *testing.F) {
	conformance.Require(f)
	files, err := conformance.ScoreFiles()
	if err != nil {
		f.Fatal(err)
	}
	examples, _ := filepath.Glob("../../../examples/*/score.yaml")
	for _, p := range append(files, examples...) {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		docs, err := DecodeDocuments(data)
		if err != nil {
			return
		}
		for _, doc := range docs {
			res, err := ToWorkload(doc, Options{Namespace: "ns"})
			if err != nil {
				continue
			}
			// ToWorkload upgraded doc in place; that upgraded form is what must come back.
			back := convertsBack(t, doc, res.Workload)
			again, err := ToWorkload(back, Options{Namespace: "ns"})
			if err != nil {
				t.Fatalf("the converted-back document does not convert: %v", err)
			}
			if !reflect.DeepEqual(again.Workload, res.Workload) {
				a, _ := json.Marshal(res.Workload)
				b, _ := json.Marshal(again.Workload)
				t.Fatalf("converting back and forth changed the Workload:\n%s\n%s", a, b)
			}
		}
	})
}

// FuzzScoreMetadata builds a valid Score file around fuzzed metadata, where the converter
// does most of its own work (labels that are or are not Kubernetes labels, annotations,
// Score metadata without a Kubernetes counterpart), and checks the same round trip.
func FuzzScoreMetadata(f *testing.F) {
	f.Add("hello", "team", "a", "score.dev/profile", "web-service", "owner", "team-a")
	f.Add("hello", "not a label", "x", "example.com/a", "", "tags", "[1,2]")
	f.Add("hello", "app.kubernetes.io/name", "web", "score.dev/score-metadata", `{"owner":"b"}`, "x", "")
	f.Add("hello", "k", "v", "kubectl.kubernetes.io/last-applied-configuration", "{}", "name", "other")
	f.Fuzz(func(t *testing.T, name, labelKey, labelValue, annotationKey, annotationValue, extraKey, extraValue string) {
		meta := map[string]any{
			"name":        name,
			"labels":      map[string]any{labelKey: labelValue},
			"annotations": map[string]any{annotationKey: annotationValue},
		}
		var extra any = extraValue
		if json.Valid([]byte(extraValue)) {
			_ = json.Unmarshal([]byte(extraValue), &extra)
		}
		if _, taken := meta[extraKey]; !taken {
			meta[extraKey] = extra
		}
		doc := map[string]any{
			"apiVersion": ScoreAPIVersion,
			"metadata":   meta,
			"containers": map[string]any{"main": map[string]any{"image": "nginx", "variables": map[string]any{"NAME": "${metadata.name}"}}},
		}
		res, err := ToWorkload(doc, Options{})
		if err != nil {
			return
		}
		convertsBack(t, doc, res.Workload)
	})
}

// convertsBack checks that w, converted from the Score document doc, converts back to the same
// document (empty collections counting as absent), and returns what it converted back to.
func convertsBack(t *testing.T, doc map[string]any, w *scorev1b1.Workload) map[string]any {
	t.Helper()
	back, err := FromWorkload(w)
	if err != nil {
		t.Fatalf("converted, but not back: %v", err)
	}
	if !SameScore(doc, back) {
		wb, _ := json.Marshal(doc)
		gb, _ := json.Marshal(back)
		t.Fatalf("the round trip lost something:\nwant %s\ngot  %s", wb, gb)
	}
	return back
}
