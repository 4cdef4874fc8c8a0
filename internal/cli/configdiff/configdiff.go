// Package configdiff compares what two Orchestrator Configs would do with one Workload: the
// profile and backend each selects, the claims each makes (a claim replaced is a new
// instance: its data and credentials are not the old ones), and copy by copy the cluster each
// places it on, the values of its plan that change (a placement override's), and the objects
// each renders (created, changed, pruned). It is pure: the caller runs the offline pipeline
// with each config.
package configdiff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/offline"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/planner"
)

// Side is one config's outcome for a Workload: a result, or the error the pipeline stopped
// with (a Workload the config cannot serve).
type Side struct {
	Result offline.Result
	Err    error
}

// Change is one difference, flagged Risky when it can lose data or stop a running Workload.
type Change struct {
	What  string `json:"what"`
	Risky bool   `json:"risky,omitempty"`
}

// ObjectChange is a rendered object that would be created, changed or pruned.
type ObjectChange struct {
	Action string `json:"action"` // created, changed or pruned
	Object string `json:"object"` // Kind namespace/name
}

// Workload is everything that would change for one Workload.
type Workload struct {
	Name string `json:"name"`
	// Cluster is the member cluster the Workload runs on under the new config (under the old
	// one when the new one cannot serve it); "" is the hub, or placement not decided.
	Cluster string `json:"cluster,omitempty"`
	// Wave is the wave of the new config's rollout policy the Workload falls in (1-based); 0
	// without a policy, or when the change does not affect it.
	Wave    int            `json:"wave,omitempty"`
	Changes []Change       `json:"changes,omitempty"`
	Objects []ObjectChange `json:"objects,omitempty"`
}

// Risky reports whether any change is risky.
func (w Workload) Risky() bool {
	for _, c := range w.Changes {
		if c.Risky {
			return true
		}
	}
	return false
}

// Empty reports whether nothing would change.
func (w Workload) Empty() bool { return len(w.Changes) == 0 && len(w.Objects) == 0 }

// Compare says what moving a Workload from the old config to the new one would do: the
// selection's changes, then copy by copy (by slot) its cluster, claims, values and objects.
func Compare(name string, before, after Side) Workload {
	d := Workload{Name: name, Cluster: firstCluster(after.Result)}
	if after.Err != nil {
		d.Cluster = firstCluster(before.Result)
	}
	switch {
	case before.Err != nil && after.Err != nil:
		if before.Err.Error() != after.Err.Error() {
			d.Changes = append(d.Changes, Change{What: fmt.Sprintf("still not servable, now because: %v", after.Err)})
		}
		return d
	case after.Err != nil:
		d.Changes = append(d.Changes, Change{What: fmt.Sprintf("would stop being servable: %v", after.Err), Risky: true})
		d.Objects = objectChanges(allObjects(before.Result), nil)
		return d
	case before.Err != nil:
		d.Changes = append(d.Changes, Change{What: "would become servable (it is not today: " + before.Err.Error() + ")"})
		d.Objects = objectChanges(nil, allObjects(after.Result))
		return d
	}
	b, a := before.Result.Selection, after.Result.Selection
	if b.Profile != a.Profile {
		d.Changes = append(d.Changes, Change{What: fmt.Sprintf("profile %s → %s", b.Profile, a.Profile)})
	}
	if b.Backend != nil && a.Backend != nil && b.Backend.BackendID != a.Backend.BackendID {
		d.Changes = append(d.Changes, Change{What: fmt.Sprintf("backend %s → %s", b.Backend.BackendID, a.Backend.BackendID)})
	}
	named := after.Result // names the copies: both are the same Workload's
	if named.Workload == nil {
		named = before.Result
	}
	for _, slot := range slots(before.Result, after.Result) {
		bc, ac := copyOf(before.Result, slot), copyOf(after.Result, slot)
		d.Changes = append(d.Changes, copyChanges(copyName(named, slot), bc, ac)...)
	}
	d.Objects = objectChanges(allObjects(before.Result), allObjects(after.Result))
	return d
}

// copyChanges says what changes for one copy: added, removed (risky with dependencies, which
// are released), or moved, its claims and its values. A copy other than the first (slot 0)
// is named in each change.
func copyChanges(name string, before, after *offline.Copy) []Change {
	prefix := ""
	if name != "" {
		prefix = "copy " + name + ": "
	}
	switch {
	case before == nil:
		return []Change{{What: fmt.Sprintf("%sa new copy on %s", prefix, clusterName(after.Cluster))}}
	case after == nil:
		return []Change{{What: fmt.Sprintf("%sremoved from %s", prefix, clusterName(before.Cluster)), Risky: len(before.Claims) > 0}}
	}
	var out []Change
	if before.Cluster != after.Cluster {
		// A move provisions its dependencies anew on the new cluster: their data stays behind.
		out = append(out, Change{What: fmt.Sprintf("cluster %s → %s", clusterName(before.Cluster), clusterName(after.Cluster)), Risky: len(after.Claims) > 0})
	}
	out = append(out, claimChanges(before.Claims, after.Claims)...)
	out = append(out, valueChanges(before.Plan, after.Plan)...)
	for i := range out {
		out[i].What = prefix + out[i].What
	}
	return out
}

// firstCluster is the cluster of a result's first copy in placement order, whose endpoint the
// Workload shows.
func firstCluster(r offline.Result) string {
	if len(r.Copies) == 0 {
		return ""
	}
	return r.Copies[0].Cluster
}

// slots are the slots of either result's copies, in order.
func slots(before, after offline.Result) []int {
	var out []int
	for _, r := range []offline.Result{before, after} {
		for _, c := range r.Copies {
			if !slices.Contains(out, c.Slot) {
				out = append(out, c.Slot)
			}
		}
	}
	slices.Sort(out)
	return out
}

// copyOf is a result's copy in slot, nil when it has none there.
func copyOf(r offline.Result, slot int) *offline.Copy {
	for i := range r.Copies {
		if r.Copies[i].Slot == slot {
			return &r.Copies[i]
		}
	}
	return nil
}

// copyName names a copy other than the first by its plan's name ("" for slot 0).
func copyName(r offline.Result, slot int) string {
	switch {
	case slot == 0:
		return ""
	case r.Workload != nil:
		return planner.CopyName(r.Workload.Name, slot)
	}
	return fmt.Sprintf("in slot %d", slot)
}

func clusterName(c string) string {
	if c == "" {
		return "the hub"
	}
	return c
}

// maxValueChanges bounds the value paths listed for one Workload; the rest are counted.
const maxValueChanges = 10

// valueChanges lists the paths of the plan's values that change (a plan whose values change
// is written again, whether or not its objects change), such as a placement override's. The
// values hold no secret: secret outputs never enter them.
func valueChanges(before, after *scorev1b1.WorkloadPlan) []Change {
	if before == nil || after == nil || before.Spec.Values == nil || after.Spec.Values == nil {
		return nil
	}
	var b, a any
	if json.Unmarshal(before.Spec.Values.Raw, &b) != nil || json.Unmarshal(after.Spec.Values.Raw, &a) != nil {
		return nil
	}
	var paths []string
	diffPaths("", b, a, &paths)
	sort.Strings(paths)
	var out []Change
	for i, p := range paths {
		if i == maxValueChanges {
			out = append(out, Change{What: fmt.Sprintf("values: %d more", len(paths)-i)})
			break
		}
		out = append(out, Change{What: "values: " + p})
	}
	return out
}

// diffPaths appends "path: old → new" for each leaf where b and a differ; maps are compared
// key by key, anything else as a whole.
func diffPaths(path string, b, a any, out *[]string) {
	bm, bok := b.(map[string]any)
	am, aok := a.(map[string]any)
	if bok && aok {
		for k, bv := range bm {
			diffPaths(join(path, k), bv, am[k], out)
		}
		for k, av := range am {
			if _, ok := bm[k]; !ok {
				diffPaths(join(path, k), nil, av, out)
			}
		}
		return
	}
	if reflect.DeepEqual(b, a) {
		return
	}
	*out = append(*out, fmt.Sprintf("%s: %s → %s", path, short(b), short(a)))
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// short is a value as JSON, cut at 40 characters; absent is "(none)".
func short(v any) string {
	if v == nil {
		return "(none)"
	}
	b, _ := json.Marshal(v)
	if len(b) > 40 {
		return string(b[:37]) + "..."
	}
	return string(b)
}

// claimChanges compares claims by resource key. Another claim name means another instance;
// another provisioner re-provisions the same instance with other objects. Both are risky.
func claimChanges(before, after []offline.Claim) []Change {
	old := map[string]offline.Claim{}
	for _, c := range before {
		old[c.Key] = c
	}
	var out []Change
	for _, c := range after {
		o, ok := old[c.Key]
		switch {
		case !ok:
			out = append(out, Change{What: fmt.Sprintf("resource %s: a new claim %s", c.Key, c.Name)})
		case o.Name != c.Name:
			out = append(out, Change{What: fmt.Sprintf("resource %s: claim %s replaced by %s, a new instance with new data and credentials", c.Key, o.Name, c.Name), Risky: true})
		case o.Provisioner != c.Provisioner:
			out = append(out, Change{What: fmt.Sprintf("resource %s: provisioner %s → %s", c.Key, o.Provisioner, c.Provisioner), Risky: true})
		}
		delete(old, c.Key)
	}
	keys := make([]string, 0, len(old))
	for k := range old {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, Change{What: fmt.Sprintf("resource %s: claim %s released", k, old[k].Name), Risky: true})
	}
	return out
}

// allObjects is every object a result would have applied, by the name objectChanges compares
// them under: provisioners' and runtime's, of every copy. The copies' objects have the same
// names on their own clusters: those of a copy other than the first are named with the copy.
func allObjects(r offline.Result) map[string]*unstructured.Unstructured {
	out := map[string]*unstructured.Unstructured{}
	for _, c := range r.Copies {
		for _, o := range c.Objects {
			out[objectName(o, copyName(r, c.Slot))] = o
		}
		for _, cl := range c.Claims {
			for _, o := range cl.Objects {
				out[objectName(o, copyName(r, c.Slot))] = o
			}
		}
	}
	return out
}

func objectChanges(before, after map[string]*unstructured.Unstructured) []ObjectChange {
	var out []ObjectChange
	for key, o := range after {
		prev, ok := before[key]
		switch {
		case !ok:
			out = append(out, ObjectChange{Action: "created", Object: key})
		case !bytes.Equal(canonical(prev), canonical(o)):
			out = append(out, ObjectChange{Action: "changed", Object: key})
		}
	}
	for key := range before {
		if _, ok := after[key]; !ok {
			out = append(out, ObjectChange{Action: "pruned", Object: key})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Object != out[j].Object {
			return out[i].Object < out[j].Object
		}
		return out[i].Action < out[j].Action
	})
	return out
}

// objectName is how a diff names an object: its kind, namespace and name, and the copy it
// belongs to when that is not the first (copy "").
func objectName(o *unstructured.Unstructured, copy string) string {
	name := fmt.Sprintf("%s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
	if copy != "" {
		name += " (copy " + copy + ")"
	}
	return name
}

func canonical(o *unstructured.Unstructured) []byte {
	b, _ := yaml.Marshal(o.Object) // sorted keys
	return b
}
