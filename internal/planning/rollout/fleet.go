package rollout

import (
	"maps"
	"reflect"
	"slices"
	"time"

	"github.com/google/cel-go/cel"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/config/provisionermatch"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/selection"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/values"
)

// Revision is a config as a rollout reads it.
type Revision struct {
	Config   *orchconfig.Config
	Selector *selection.Selector
}

// Fleet is what a rollout is computed over.
type Fleet struct {
	Workloads []*scorev1b1.Workload
	// NamespaceLabels are the labels of the Workloads' namespaces (read for an orderBy
	// namespaceLabel).
	NamespaceLabels map[string]map[string]string
	// Pins are the pinned Workloads ("namespace/name"): in no wave.
	Pins   map[string]string
	Region string
}

// Waves lists the Workloads of the fleet the change from → to affects and puts them in the
// waves of to's policy (which it must have): ordered by its orderBy, Workloads that share an
// instance the change provisions differently in one wave. It returns how many are affected.
func Waves(f Fleet, from, to Revision) (int, []scorev1b1.RolloutWave) {
	policy := to.Config.Rollout
	var entries []Entry
	shared := unionFind{}
	for _, w := range f.Workloads {
		key := w.Namespace + "/" + w.Name
		if _, pinned := f.Pins[key]; pinned || !w.DeletionTimestamp.IsZero() {
			continue
		}
		changed, instances := affected(w, from, to, f.Region)
		if !changed {
			continue
		}
		for _, instance := range instances {
			shared.join(key, "instance "+instance)
		}
		entries = append(entries, Entry{Key: key, Order: order(policy.OrderBy, w, f.NamespaceLabels)})
	}
	for i := range entries {
		if _, joined := shared.parent[entries[i].Key]; joined {
			entries[i].Group = shared.find(entries[i].Key)
		}
	}
	return len(entries), Assign(policy.WaveSizes(), entries)
}

// Affected reports whether the change from one config to another renders or provisions a
// Workload differently: another profile or backend is selected, or the same backend with
// another template or values, or one of its resources is served by another definition (or
// the same one changed) — what its plan and its claims are made of.
func Affected(w *scorev1b1.Workload, from, to Revision, region string) bool {
	changed, _ := affected(w, from, to, region)
	return changed
}

// affected is Affected, with the instances the Workload may share (its resources with an
// id) whose provisioning the change alters.
func affected(w *scorev1b1.Workload, from, to Revision, region string) (bool, []string) {
	a, b := from.Selector.Select(selection.Input{Workload: w, Region: region}), to.Selector.Select(selection.Input{Workload: w, Region: region})
	changed := a.OK != b.OK || a.Profile != b.Profile || !sameBackend(a.Backend, b.Backend)
	var instances []string
	for _, key := range slices.Sorted(maps.Keys(w.Spec.Resources)) {
		c := claimOf(w, key)
		if provisionermatch.Same(from.Config, to.Config, c) {
			continue
		}
		changed = true
		if c.ID == "" {
			continue
		}
		ns := w.Namespace
		def, res := provisionermatch.Serving(to.Config, c)
		if def == nil {
			def, res = provisionermatch.Serving(from.Config, c)
		}
		if def != nil && def.Sharing != nil {
			ns = "shared " + def.Sharing.Namespace
		}
		instances = append(instances, ns+"/"+c.Type+"/"+res.Class+"/"+c.ID)
	}
	return changed, instances
}

func sameBackend(a, b *orchconfig.Backend) bool {
	if a == nil || b == nil {
		return a == b
	}
	x, y := *a, *b
	x.Rollout, y.Rollout = nil, nil // how long a rollout watches is not what is rendered
	return reflect.DeepEqual(x, y)
}

// claimOf is what a Workload's resource asks a provisioner for, its params as written.
func claimOf(w *scorev1b1.Workload, key string) provisionermatch.Claim {
	res := w.Spec.Resources[key]
	c := provisionermatch.Claim{Type: res.Type}
	if res.Class != nil {
		c.Class = *res.Class
	}
	if res.ID != nil {
		c.ID = *res.ID
	}
	c.Params, _ = values.Object(res.Params)
	return c
}

// order is a Workload's place among the orderBy values: its index, or after the last.
func order(o *orchconfig.RolloutOrder, w *scorev1b1.Workload, namespaceLabels map[string]map[string]string) int {
	if o == nil {
		return 0
	}
	labels := w.Labels
	label := o.Label
	if o.NamespaceLabel != "" {
		labels, label = namespaceLabels[w.Namespace], o.NamespaceLabel
	}
	value, ok := labels[label]
	if i := slices.Index(o.Values, value); ok && i >= 0 {
		return i
	}
	return len(o.Values)
}

// Timing is a Workload's bake time and progress deadline under to's policy: the longest of
// the policy's, its backend's and those of the definitions that serve its resources.
func Timing(w *scorev1b1.Workload, to Revision, region string) (bake, deadline time.Duration) {
	var overrides []*orchconfig.RolloutTiming
	if sel := to.Selector.Select(selection.Input{Workload: w, Region: region}); sel.OK {
		overrides = append(overrides, sel.Backend.Rollout)
	}
	for key := range w.Spec.Resources {
		if def, _ := provisionermatch.Serving(to.Config, claimOf(w, key)); def != nil {
			overrides = append(overrides, def.Rollout)
		}
	}
	return to.Config.Rollout.For(overrides...)
}

// GateExpr is a policy's gate expression, compiled.
type GateExpr struct{ prg cel.Program }

// CompileGate compiles a policy's gate ("" compiles to nil, which always holds).
func CompileGate(expr string) (*GateExpr, error) {
	if expr == "" {
		return nil, nil
	}
	prg, err := orchconfig.CompileRolloutGate(expr)
	if err != nil {
		return nil, err
	}
	return &GateExpr{prg: prg}, nil
}

// Holds evaluates the expression over the plan's applied objects and the Workload; an
// expression that cannot be evaluated (a field not there) does not hold.
func (g *GateExpr) Holds(objects []scorev1b1.AppliedObject, w *scorev1b1.Workload) bool {
	if g == nil {
		return true
	}
	objs := make([]any, 0, len(objects))
	for _, o := range objects {
		objs = append(objs, map[string]any{"cluster": o.Cluster, "apiVersion": o.APIVersion, "kind": o.Kind,
			"namespace": o.Namespace, "name": o.Name, "health": o.Health, "message": o.Message})
	}
	labels := map[string]any{}
	for k, v := range w.Labels {
		labels[k] = v
	}
	out, _, err := g.prg.Eval(map[string]any{"objects": objs,
		"workload": map[string]any{"name": w.Name, "namespace": w.Namespace, "labels": labels}})
	if err != nil {
		return false
	}
	b, ok := out.Value().(bool)
	return ok && b
}

// unionFind joins keys into groups.
type unionFind struct{ parent map[string]string }

func (u *unionFind) find(k string) string {
	for u.parent[k] != "" && u.parent[k] != k {
		k = u.parent[k]
	}
	return k
}

func (u *unionFind) join(a, b string) {
	if u.parent == nil {
		u.parent = map[string]string{}
	}
	ra, rb := u.find(a), u.find(b)
	if ra == rb {
		u.parent[ra] = ra
		return
	}
	if rb < ra {
		ra, rb = rb, ra
	}
	u.parent[rb], u.parent[ra] = ra, ra
}

// MemberOf is what the gate reads of a Workload of a wave (key) and of its plans — one, or one
// per copy on several clusters, the Workload's own first (none yet: nil) — under to's policy:
// the revision the plans were rendered from ("" while its copies' plans name different ones),
// whether the runtime has reported on every one of them as it is, and whether the Workload is
// healthy — and the gate expression holds over every copy's objects — since when.
//
// Healthy is Ready, not degraded, with every plan's objects healthy: a Workload stays Ready
// while a new version rolls out behind the one serving ("Ready; being updated"), and with
// RuntimeDegraded while it runs with reduced capacity or one copy of two ready; neither is
// the new revision proven. Since is the latest of the Ready condition's transition and of each
// plan's Healthy condition's, so that the bake counts from the moment every copy is healthy
// (a Workload going from degraded to healthy moves no transition of its own).
func MemberOf(key string, w *scorev1b1.Workload, plans []*scorev1b1.WorkloadPlan, to Revision, region string, gate *GateExpr) Member {
	m := Member{Key: key, Settled: len(plans) > 0}
	m.Bake, m.Deadline = Timing(w, to, region)
	healthy := true
	var objects []scorev1b1.AppliedObject
	for i, p := range plans {
		if i == 0 {
			m.Revision = p.Spec.ConfigRevision
		} else if p.Spec.ConfigRevision != m.Revision {
			m.Revision = ""
		}
		m.Settled = m.Settled && p.Status.ObservedGeneration == p.Generation
		objects = append(objects, p.Status.Objects...)
		c := meta.FindStatusCondition(p.Status.Conditions, scorev1b1.PlanConditionHealthy)
		healthy = healthy && c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == p.Generation
		if c != nil && c.LastTransitionTime.After(m.Since) {
			m.Since = c.LastTransitionTime.Time
		}
	}
	if c := meta.FindStatusCondition(w.Status.Conditions, scorev1b1.ConditionReady); c != nil {
		m.Ready = c.Status == metav1.ConditionTrue && c.Reason != string(scorev1b1.ReasonRuntimeDegraded) && c.ObservedGeneration == w.Generation
		if c.LastTransitionTime.After(m.Since) {
			m.Since = c.LastTransitionTime.Time
		}
	}
	m.Ready = m.Ready && healthy && gate.Holds(objects, w)
	return m
}
