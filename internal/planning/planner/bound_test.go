package planner

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/templating/placeholder"
)

func withAnnotation(k, v string) opt {
	return func(w *scorev1b1.Workload) {
		if w.Annotations == nil {
			w.Annotations = map[string]string{}
		}
		w.Annotations[k] = v
	}
}

// allocated is the memory f allocates, in bytes.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func buildPlan(w *scorev1b1.Workload, claims map[string]ClaimView) (PlanResult, error) {
	return BuildPlan(PlanInput{Workload: w, Profile: "web-service", Claims: claims,
		Backend: orchconfig.Backend{BackendID: "k8s-web", RuntimeClass: "kubernetes", Version: "1.0.0",
			Template: orchconfig.Template{Kind: "manifests", Ref: "configmap://score-system/t/web.yaml", Digest: "sha256:" + strings.Repeat("a", 64)}}})
}

// One 80 KB Workload (a 60 KB annotation, two variables of 400 copies of
// ${metadata.annotations.big}) would, unbounded, take the controllers from 96 to 355 MB, and
// its plan would be refused by the API server for ever. What substituting placeholders may
// produce is bounded, the refusal is an error the Workload reports, and the work stops at the
// bound.
func TestPlaceholderExpansionIsBounded(t *testing.T) {
	big := strings.Repeat("x", 60<<10)
	copies := strings.Repeat("${metadata.annotations.big}", 400)
	bigOutput := map[string]any{"big": big}
	for _, tc := range []struct {
		name   string
		w      *scorev1b1.Workload
		claims map[string]ClaimView
		params bool
	}{
		{name: "variables", w: workload(withAnnotation("big", big), withVar("A", copies), withVar("B", copies))},
		{name: "a file", w: workload(withAnnotation("big", big), withFile("/etc/big", scorev1b1.ContainerFile{Content: &copies}))},
		{name: "arguments", w: workload(withAnnotation("big", big), withContainer("main", scorev1b1.Container{Image: "nginx", Args: []string{copies, copies}}))},
		{name: "a non-secret output the runtime inlines", w: workload(withResource("db", "postgres", ""), withVar("A", strings.Repeat("${resources.db.big}", 400))),
			claims: map[string]ClaimView{"db": ready("web-db", bigOutput)}},
		{name: "many references to a short output (the plan's own size)", w: workload(withResource("db", "postgres", ""), withVar("A", strings.Repeat("${resources.db.x}-", 24000))),
			claims: map[string]ClaimView{"db": ready("web-db", map[string]any{"x": "1"})}},
		{name: "params", params: true, w: workload(withAnnotation("big", big), withResource("db", "postgres", `{"x":"`+copies+`"}`))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			mem := allocated(func() {
				if tc.params {
					_, err = DesiredClaims(ClaimsInput{Workload: tc.w})
				} else {
					_, err = buildPlan(tc.w, tc.claims)
				}
			})
			var tooLarge *placeholder.TooLarge
			if !errors.As(err, &tooLarge) {
				t.Fatalf("want a refusal for the size, got %v", err)
			}
			if mem > 16<<20 {
				t.Errorf("refusing it allocated %d MiB", mem>>20)
			}
			if msg := Sentence(err.Error()); strings.Contains(msg, big[:100]) || len(msg) > 300 {
				t.Errorf("the message is not one short sentence: %.300s", msg)
			}
		})
	}
}

// Below the bound, composing is linear: 20,000 placeholders of a 40-byte value (800 KB) are
// composed without copying the growing value for each one.
func TestPlaceholderExpansionIsLinear(t *testing.T) {
	w := workload(withAnnotation("v", strings.Repeat("y", 40)), withVar("A", strings.Repeat("${metadata.annotations.v}", 20000)))
	var res PlanResult
	var err error
	mem := allocated(func() { res, err = buildPlan(w, nil) })
	if err != nil {
		t.Fatal(err)
	}
	if got := len(*res.Spec.Projection.Containers[0].Env[0].Value); got != 800000 {
		t.Fatalf("the value has %d bytes", got)
	}
	if mem > 32<<20 {
		t.Errorf("composing 800 KB allocated %d MiB", mem>>20)
	}
}

// CheckInputs tells the same refusal first, naming the field where the text the metadata
// placeholders stand for crosses the bound, before any claim is made.
func TestCheckInputsRefusesTheExpansionEarly(t *testing.T) {
	big := strings.Repeat("x", 60<<10)
	copies := strings.Repeat("${metadata.annotations.big}", 400)
	w := workload(withAnnotation("big", big), withVar("A", copies), withVar("B", copies), withResource("db", "postgres", ""))
	problems := CheckInputs(w, Allowed{})
	if len(problems) != 1 || problems[0].Field != "spec.containers.main.variables.A" || !strings.Contains(problems[0].Message, "expand to more than 1 MiB") {
		t.Fatalf("problems: %v", problems)
	}
	// Params count apart, as their own budget.
	w = workload(withAnnotation("big", big), withVar("A", strings.Repeat("${metadata.annotations.big}", 10)),
		withResource("db", "postgres", `{"x":"`+strings.Repeat("${metadata.annotations.big}", 10)+`"}`))
	if problems := CheckInputs(w, Allowed{}); len(problems) != 0 {
		t.Fatalf("600 KB of values and 600 KB of params: %v", problems)
	}
}
