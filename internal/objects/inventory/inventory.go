// Package inventory is what the runtime and the provisioner record of what they applied: an
// entry per object (its health, its UID), keyed by group, kind, namespace and name, never by
// version (Flux's inventory key: the same object is served under every version of its kind).
// It is pure.
package inventory

import (
	"slices"
	"sort"
	"strings"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/termtext"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Union is previous with the entries of applied added or replaced (by Key), in previous's
// order then applied's: the inventory while a staged apply waits, which must still list what
// earlier renders applied, for a later prune.
func Union(previous, applied []scorev1b1.AppliedObject) []scorev1b1.AppliedObject {
	index := make(map[string]int, len(applied))
	for i, o := range applied {
		index[Key(o)] = i
	}
	out := make([]scorev1b1.AppliedObject, 0, len(previous)+len(applied))
	used := map[int]bool{}
	for _, o := range previous {
		if i, ok := index[Key(o)]; ok {
			out = append(out, applied[i])
			used[i] = true
			continue
		}
		out = append(out, o)
	}
	for i, o := range applied {
		if !used[i] {
			out = append(out, o)
		}
	}
	return out
}

// Applied is the inventory entry of an object. Its message, the object's own words (a Job's
// condition, a container's termination message), is stored escaped.
func Applied(u *unstructured.Unstructured, health, message string) scorev1b1.AppliedObject {
	return scorev1b1.AppliedObject{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName(), UID: string(u.GetUID()), Health: health, Message: termtext.Escape(message)}
}

// Key identifies an inventory entry: cluster (when not the hub), group, kind, namespace and
// name, never the version — the same object is served under every version of its kind.
func Key(o scorev1b1.AppliedObject) string {
	group := ""
	if g, _, ok := strings.Cut(o.APIVersion, "/"); ok {
		group = g
	}
	key := group + "/" + o.Kind + "/" + o.Namespace + "/" + o.Name
	if o.Cluster != "" {
		key = o.Cluster + ":" + key
	}
	return key
}

// AnyFailed reports whether an object of the inventory is judged Failed.
func AnyFailed(objs []scorev1b1.AppliedObject) bool {
	return slices.ContainsFunc(objs, func(o scorev1b1.AppliedObject) bool { return o.Health == scorev1b1.HealthFailed })
}

// NotCurrent names the entries whose health is not Current, in order ("Kind name").
func NotCurrent(objs []scorev1b1.AppliedObject) []string {
	var out []string
	for _, o := range objs {
		if o.Health != scorev1b1.HealthCurrent {
			out = append(out, o.Kind+" "+o.Name)
		}
	}
	sort.Strings(out)
	return out
}
