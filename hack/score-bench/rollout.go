package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/devenv"
)

// rolloutPhase is a config change taken through a rollout.
type rolloutPhase struct {
	phase
	Change      string  `json:"change"`
	Affected    int     `json:"affected"`
	Waves       int     `json:"waves"`
	BakeSeconds float64 `json:"bakeSeconds"`
}

// rolloutChange gives the config a rollout policy with the bake time, waits for its first
// (baseline) rollout, then makes the change — every backend's values (replicas 2), or a label
// on the first object every provisioner definition's manifests create — and times the
// change's rollout from the edit to Completed, counting the writes meanwhile.
func (s *runState) rolloutChange(ctx context.Context, bake time.Duration, change string) (*rolloutPhase, error) {
	edit, ok := rolloutChanges[change]
	if !ok {
		return nil, fmt.Errorf("--rollout-change %q: values or provisioners", change)
	}
	if err := devenv.EditConfig(ctx, s.c, func(doc map[string]any) error {
		doc["rollout"] = map[string]any{"bakeTime": bake.String()}
		return nil
	}); err != nil {
		return nil, err
	}
	if _, err := s.waitRollout(ctx, 1); err != nil {
		return nil, err
	}
	// Every plan takes the revision with the policy (the baseline: nothing to roll out from);
	// that settles before the change is counted.
	if err := sleep(ctx, 15*time.Second); err != nil {
		return nil, err
	}
	if _, err := s.auditSince(); err != nil {
		return nil, err
	}
	logf(s.log, "changing %s under a rollout policy (bake %s)", change, bake)
	start := time.Now()
	if err := devenv.EditConfig(ctx, s.c, func(doc map[string]any) error { edit(doc); return nil }); err != nil {
		return nil, err
	}
	r, err := s.waitRollout(ctx, 2)
	if err != nil {
		return nil, err
	}
	d := time.Since(start)
	writes, err := s.auditSince()
	if err != nil {
		return nil, err
	}
	logf(s.log, "the change went through %d waves in %.1fs", len(r.Status.Waves), d.Seconds())
	return &rolloutPhase{phase: phaseOf(writes.summary(), d), Change: change, Affected: int(r.Status.Affected), Waves: len(r.Status.Waves), BakeSeconds: bake.Seconds()}, nil
}

// rolloutChanges are the changes --rollout-change names.
var rolloutChanges = map[string]func(doc map[string]any){
	"values": func(doc map[string]any) {
		for _, p := range doc["profiles"].([]any) {
			for _, b := range p.(map[string]any)["backends"].([]any) {
				tpl := b.(map[string]any)["template"].(map[string]any)
				values, _ := tpl["values"].(map[string]any)
				if values == nil {
					values = map[string]any{}
				}
				values["replicas"] = 2
				tpl["values"] = values
			}
		}
	},
	"provisioners": func(doc map[string]any) {
		for _, p := range doc["provisioners"].([]any) {
			def := p.(map[string]any)
			if m, ok := def["manifests"].(string); ok {
				def["manifests"] = strings.Replace(m, "labels: {", "labels: {score.dev/bench-rollout: \"2\", ", 1)
			}
		}
	},
}

// waitRollout waits until the n-th rollout is Completed (a bench may poll: it is not a
// controller), and fails when it halts.
func (s *runState) waitRollout(ctx context.Context, n int) (*scorev1b1.ConfigRollout, error) {
	name := fmt.Sprintf("rollout-%04d", n)
	for {
		r := &scorev1b1.ConfigRollout{}
		err := s.c.Get(ctx, client.ObjectKey{Namespace: devenv.SystemNamespace, Name: name}, r)
		switch {
		case err == nil && r.Status.Phase == scorev1b1.RolloutCompleted:
			return r, nil
		case err == nil && r.Status.Phase == scorev1b1.RolloutHalted:
			return nil, fmt.Errorf("rollout %s halted: %s", name, r.Status.Message)
		case err != nil && client.IgnoreNotFound(err) != nil:
			return nil, err
		}
		if err := sleep(ctx, time.Second); err != nil {
			return nil, err
		}
	}
}
