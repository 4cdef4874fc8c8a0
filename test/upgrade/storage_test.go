package upgrade

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// storedKind is a score.dev kind the previous release's controllers and users wrote: where
// its objects live, and an empty object of this commit's Go type for it.
type storedKind struct {
	kind       string
	namespaces []string
	typed      func() any
}

// storedKinds are the kinds the fleet stores.
var storedKinds = []storedKind{
	{"Workload", []string{shop, payments}, func() any { return &scorev1b1.Workload{} }},
	{"ResourceClaim", fleetNamespaces, func() any { return &scorev1b1.ResourceClaim{} }},
	{"WorkloadPlan", []string{shop, payments}, func() any { return &scorev1b1.WorkloadPlan{} }},
	{"WorkloadExposure", []string{shop, payments}, func() any { return &scorev1b1.WorkloadExposure{} }},
	{"ConfigRollout", []string{namespace}, func() any { return &scorev1b1.ConfigRollout{} }},
}

// readStored reads every object of the stored kinds as the API server serves it, unstructured:
// by "Kind namespace/name".
func readStored(t *testing.T) map[string]*unstructured.Unstructured {
	t.Helper()
	out := map[string]*unstructured.Unstructured{}
	for _, k := range storedKinds {
		for _, ns := range k.namespaces {
			var list unstructured.UnstructuredList
			list.SetGroupVersionKind(schema.GroupVersionKind{Group: scorev1b1.GroupVersion.Group, Version: scorev1b1.GroupVersion.Version, Kind: k.kind + "List"})
			if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			for i := range list.Items {
				o := &list.Items[i]
				out[k.kind+" "+ns+"/"+o.GetName()] = o
			}
		}
	}
	return out
}

// checkReadsBackUnchanged is the storage check: every object the previous release
// stored (before, read under its CRDs), read again once this commit's CRDs are applied and
// before this commit's controllers run, has the same spec, status, labels, annotations and
// owners — this commit's schemas add no default to stored objects and prune nothing of them —
// and goes through this commit's Go types (decoded and encoded again, as its controllers read
// it) without losing or changing a field.
func checkReadsBackUnchanged(t *testing.T, before map[string]*unstructured.Unstructured) {
	t.Helper()
	after := readStored(t)
	compared := map[string]int{}
	for key, was := range before {
		now, ok := after[key]
		if !ok {
			t.Errorf("%s: stored by the previous release, gone under this commit's CRDs", key)
			continue
		}
		stored := plainJSON(t, now.Object)
		for _, field := range [][]string{{"spec"}, {"status"}, {"metadata", "labels"}, {"metadata", "annotations"}, {"metadata", "ownerReferences"}, {"metadata", "finalizers"}} {
			a, _, _ := unstructured.NestedFieldNoCopy(was.Object, field...)
			b, _, _ := unstructured.NestedFieldNoCopy(now.Object, field...)
			if !reflect.DeepEqual(a, b) {
				t.Errorf("%s: %v read back differently under this commit's CRDs:\n  was %s\n  now %s", key, field, jsonString(a), jsonString(b))
			}
		}
		// Through this commit's Go types.
		kind := was.GetKind()
		i := slices.IndexFunc(storedKinds, func(k storedKind) bool { return k.kind == kind })
		typed := storedKinds[i].typed()
		raw, err := json.Marshal(now.Object)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, typed); err != nil {
			t.Errorf("%s: this commit's %s does not decode it: %v", key, kind, err)
			continue
		}
		through := plainJSON(t, typed)
		for _, field := range []string{"spec", "status"} {
			if diff := lostOrChanged(stored[field], through[field], "."+field); diff != "" {
				t.Errorf("%s: %s changes through this commit's Go type: %s\n  stored  %s\n  through %s", key, field, diff, jsonString(stored[field]), jsonString(through[field]))
			}
		}
		compared[kind]++
	}
	t.Logf("stored by the previous release, read back unchanged through this commit's CRDs and Go types: %v", compared)
}

// lostOrChanged is the first field of stored that through (the same value encoded again by a
// Go type) loses or changes, "" when there is none. A field through has and stored has not
// must be its type's zero value: a Go field without omitempty encodes it (a ConfigRollout's
// status.affected and status.wave, 0, which the stored object leaves out), which reads as the
// same object.
func lostOrChanged(stored, through any, path string) string {
	sm, ok := stored.(map[string]any)
	if !ok {
		if !reflect.DeepEqual(stored, through) {
			return fmt.Sprintf("%s: %s -> %s", path, jsonString(stored), jsonString(through))
		}
		return ""
	}
	tm, ok := through.(map[string]any)
	if !ok {
		return fmt.Sprintf("%s: %s -> %s", path, jsonString(stored), jsonString(through))
	}
	for k, v := range sm {
		if diff := lostOrChanged(v, tm[k], path+"."+k); diff != "" {
			return diff
		}
	}
	for k, v := range tm {
		if _, ok := sm[k]; !ok && !isZero(v) {
			return fmt.Sprintf("%s.%s: absent -> %s", path, k, jsonString(v))
		}
	}
	return ""
}

// isZero is a JSON value a Go zero value encodes to.
func isZero(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case bool:
		return !v
	case float64:
		return v == 0
	case string:
		return v == ""
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	}
	return false
}

// plainJSON is v encoded and decoded again as plain JSON values (numbers as float64), so that
// an unstructured object's int64 and a decoded one's float64 compare equal.
func plainJSON(t *testing.T, v any) map[string]any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func jsonString(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(raw)
}
