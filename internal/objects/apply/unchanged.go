package apply

// Whether a server-side apply would change anything: when every field of the desired object
// already has that value in the live object, the apply is skipped. A no-op apply is still a
// write, so without this a controller restarting over a healthy cluster would rewrite every
// object it manages. Drift in a field the controller manages still differs, and is still
// corrected.

import (
	"encoding/json"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Unchanged reports whether live already holds every field of desired with the same value.
// Fields the API server adds (defaults, status, server-set metadata) do not matter.
func Unchanged(desired, live *unstructured.Unstructured) bool {
	if live == nil {
		return false
	}
	return subset(normalize(desired.Object), normalize(live.Object))
}

func normalize(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return nil
	}
	return out
}

func subset(want, have any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			hv, present := h[k]
			if !present {
				if isEmpty(wv) {
					continue
				}
				return false
			}
			if !subset(wv, hv) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return false
		}
		for i := range w {
			if !subset(w[i], h[i]) {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(want, have)
	}
}

// isEmpty values are dropped by the API server (omitempty), so their absence matches.
func isEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	case string:
		return x == ""
	case bool:
		return !x
	}
	return false
}
