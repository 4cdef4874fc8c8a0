package planner

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/templating/placeholder"
)

// FuzzBuildPlan checks, for any annotation, output, variable and file text repeated any number
// of times, that the plan builder's work is bounded: it allocates at most 64 MiB, and what it
// emits is a plan of at most MaxExpanded bytes plus the fixed fields, or a refusal (a
// malformed placeholder, or *placeholder.TooLarge) — never a larger plan.
func FuzzBuildPlan(f *testing.F) {
	f.Add("hello", "world", "${metadata.annotations.a}", "port=${resources.db.port}", uint16(3))
	f.Add(strings.Repeat("x", 4096), "y", "${metadata.annotations.a}${metadata.annotations.a}", "${metadata.annotations}", uint16(400))
	f.Add("a", strings.Repeat("o", 2048), "${resources.db.out}-", "$${metadata.annotations.a}", uint16(1000))
	f.Add("$", "}", "${", "${metadata.name", uint16(65535))
	f.Fuzz(func(t *testing.T, annotation, output, variable, file string, times uint16) {
		w := workload(withAnnotation("a", annotation), withResource("db", "postgres", ""),
			withVar("A", strings.Repeat(variable, int(times))),
			withFile("/etc/f", scorev1b1.ContainerFile{Content: ptrTo(strings.Repeat(file, int(times)%512))}))
		claims := map[string]ClaimView{"db": ready("web-db", map[string]any{"out": output, "port": 5432})}
		var res PlanResult
		var err error
		mem := allocated(func() { res, err = buildPlan(w, claims) })
		if limit := uint64(64 << 20); mem > limit {
			t.Fatalf("building the plan allocated %d MiB (> %d)", mem>>20, limit>>20)
		}
		var tooLarge *placeholder.TooLarge
		var parse *placeholder.ParseError
		switch {
		case err != nil && !errors.As(err, &tooLarge) && !errors.As(err, &parse) && !strings.Contains(err.Error(), "metadata the workload does not have"):
			t.Fatalf("an unexpected refusal: %v", err)
		case err != nil || res.Spec == nil:
			return
		}
		raw, _ := json.Marshal(res.Spec)
		if len(raw) > placeholder.MaxExpanded+64<<10 {
			t.Fatalf("a plan of %d KiB", len(raw)>>10)
		}
	})
}

func ptrTo(s string) *string { return &s }
