package integration

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// normalized makes two Score documents comparable: JSON numbers, and empty collections
// (which mean the same as absent ones) dropped.
func normalized(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return pruneEmpty(out)
}

func pruneEmpty(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			e = pruneEmpty(e)
			if m, ok := e.(map[string]any); (ok && len(m) == 0) || e == nil {
				delete(x, k)
				continue
			}
			if l, ok := e.([]any); ok && len(l) == 0 {
				delete(x, k)
				continue
			}
			x[k] = e
		}
	case []any:
		for i := range x {
			x[i] = pruneEmpty(x[i])
		}
	}
	return v
}
