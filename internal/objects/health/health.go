// Package health judges applied objects: kstatus for every kind it understands (built-in
// kinds and custom resources with standard conditions), and the Orchestrator Config's CEL
// health rules for the kinds the platform describes. It is pure.
package health

import (
	"fmt"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"github.com/google/cel-go/cel"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
)

// Checker judges objects. The zero value and nil judge by kstatus alone.
type Checker struct {
	rules map[string]rule
}

type rule struct {
	healthy, failed, message cel.Program
}

// New compiles the config's health rules.
func New(rules []orchconfig.HealthRule) (*Checker, error) {
	c := &Checker{rules: map[string]rule{}}
	if len(rules) == 0 {
		return c, nil
	}
	env, err := orchconfig.HealthEnv()
	if err != nil {
		return nil, err
	}
	for i, r := range rules {
		var compiled rule
		if compiled.healthy, err = orchconfig.CompileHealthExpr(env, r.Healthy, cel.BoolType); err != nil {
			return nil, fmt.Errorf("health[%d].healthy: %w", i, err)
		}
		if r.Failed != "" {
			if compiled.failed, err = orchconfig.CompileHealthExpr(env, r.Failed, cel.BoolType); err != nil {
				return nil, fmt.Errorf("health[%d].failed: %w", i, err)
			}
		}
		if r.Message != "" {
			if compiled.message, err = orchconfig.CompileHealthExpr(env, r.Message, cel.StringType); err != nil {
				return nil, fmt.Errorf("health[%d].message: %w", i, err)
			}
		}
		c.rules[r.APIVersion+"/"+r.Kind] = compiled
	}
	return c, nil
}

// Judge returns the object's health (Current, InProgress, Failed, or another kstatus result)
// and a message. A rule for the object's kind decides when there is one: failed before
// healthy; an expression that cannot be evaluated (a field not there yet) counts as not
// true. Otherwise kstatus decides; an object kstatus cannot read is Current, as the API
// server accepted it.
func (c *Checker) Judge(u *unstructured.Unstructured) (string, string) {
	if c != nil {
		if r, ok := c.rules[u.GetAPIVersion()+"/"+u.GetKind()]; ok {
			return r.judge(u)
		}
	}
	res, err := status.Compute(u)
	if err != nil {
		return scorev1b1.HealthCurrent, ""
	}
	return string(res.Status), res.Message
}

func (r rule) judge(u *unstructured.Unstructured) (string, string) {
	vars := map[string]any{"self": u.Object}
	message := ""
	if r.message != nil {
		if out, _, err := r.message.Eval(vars); err == nil {
			message, _ = out.Value().(string)
		}
	}
	if r.failed != nil && isTrue(r.failed, vars) {
		return scorev1b1.HealthFailed, message
	}
	if isTrue(r.healthy, vars) {
		return scorev1b1.HealthCurrent, message
	}
	return scorev1b1.HealthInProgress, message
}

func isTrue(p cel.Program, vars map[string]any) bool {
	out, _, err := p.Eval(vars)
	if err != nil {
		return false
	}
	b, ok := out.Value().(bool)
	return ok && b
}

// Serving reports whether any workload controller among the objects (a Deployment,
// StatefulSet or DaemonSet) still has an available replica: a runtime that is not healthy
// but serves is degraded, not down.
func Serving(objs []*unstructured.Unstructured) bool {
	for _, o := range objs {
		if field := servingField(o.GetKind()); field != "" {
			if n, _, _ := unstructured.NestedInt64(o.Object, "status", field); n > 0 {
				return true
			}
		}
	}
	return false
}

// ServesNothing reports whether none of the objects is a workload controller that serves (a
// Deployment, StatefulSet or DaemonSet): what they run, Jobs, runs to completion, and what an
// earlier run completed stands while another runs.
func ServesNothing(objs []*unstructured.Unstructured) bool {
	for _, o := range objs {
		if servingField(o.GetKind()) != "" {
			return false
		}
	}
	return true
}

// servingField is the status field that counts a workload controller's serving replicas, ""
// for a kind that is none.
func servingField(kind string) string {
	switch kind {
	case "Deployment":
		return "availableReplicas"
	case "StatefulSet":
		return "readyReplicas"
	case "DaemonSet":
		return "numberAvailable"
	}
	return ""
}
