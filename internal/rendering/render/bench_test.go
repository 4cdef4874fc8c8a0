package render

import (
	"testing"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// BenchmarkRenderWebService renders the default web-service template over a plan with a
// dependency, files and probes: what the runtime does for every plan (go test -bench).
func BenchmarkRenderWebService(b *testing.B) {
	in := Input{Workload: "web", Namespace: "ns", Spec: plan(values, mainContainer()), Template: templateFile(b, "web-service.yaml"),
		SecretValue: func(ref scorev1b1.OutputRef) (string, error) { return "s3cret", nil }}
	for b.Loop() {
		if _, err := Render(in); err != nil {
			b.Fatal(err)
		}
	}
}
