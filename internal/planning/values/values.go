// Package values composes a plan's values: defaults ⊕ normalize(Workload) ⊕ outputs, where
// ⊕ is a deep merge and the right-hand side wins. It is pure.
package values

import (
	"encoding/json"
	"reflect"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// Compose merges its arguments left to right; a later map wins over an earlier one, key by
// key and recursively; any other value (lists included) replaces. The inputs are not changed.
func Compose(layers ...map[string]any) map[string]any {
	out := map[string]any{}
	for _, l := range layers {
		out = merge(out, l)
	}
	return out
}

func merge(dst, src map[string]any) map[string]any {
	out := make(map[string]any, len(dst)+len(src))
	for k, v := range dst {
		out[k] = v
	}
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := out[k].(map[string]any); ok {
				out[k] = merge(dm, sm)
				continue
			}
			out[k] = merge(map[string]any{}, sm)
			continue
		}
		out[k] = deepCopy(v)
	}
	return out
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return merge(map[string]any{}, x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = deepCopy(e)
		}
		return out
	default:
		return v
	}
}

// Normalize is the Workload as values: its identity and everything of its containers and
// service that holds no placeholder. Command, args, variables, files and volumes, which may
// hold placeholders, travel in the plan's projection instead. Defaults are made explicit:
// a port's protocol (TCP) and targetPort (its port).
//
//	workload:   {name, namespace, labels, annotations}
//	containers: {<name>: {image, resources, livenessProbe, readinessProbe, before}}
//	service:    {ports: {<name>: {port, targetPort, protocol}}}
func Normalize(w *scorev1b1.Workload) map[string]any {
	containers := map[string]any{}
	for name, c := range w.Spec.Containers {
		m := map[string]any{}
		if c.Image != "." {
			m["image"] = c.Image
		}
		if c.Resources != nil {
			m["resources"] = toMap(c.Resources)
		}
		if c.LivenessProbe != nil {
			m["livenessProbe"] = toMap(c.LivenessProbe)
		}
		if c.ReadinessProbe != nil {
			m["readinessProbe"] = toMap(c.ReadinessProbe)
		}
		if len(c.Before) > 0 {
			m["before"] = toMap(c.Before)
		}
		containers[name] = m
	}
	out := map[string]any{
		"workload": map[string]any{
			"name":        w.Name,
			"namespace":   w.Namespace,
			"labels":      stringMap(UserLabels(w.Labels)),
			"annotations": stringMap(userAnnotations(w.Annotations)),
		},
		"containers": containers,
	}
	if w.Spec.Service != nil && len(w.Spec.Service.Ports) > 0 {
		ports := map[string]any{}
		for name, p := range w.Spec.Service.Ports {
			target := p.Port
			if p.TargetPort != nil {
				target = *p.TargetPort
			}
			protocol := "TCP"
			if p.Protocol != nil {
				protocol = *p.Protocol
			}
			ports[name] = map[string]any{"port": int64(p.Port), "targetPort": int64(target), "protocol": protocol}
		}
		out["service"] = map[string]any{"ports": ports}
	}
	return out
}

// UserLabels are a Workload's labels as its templates and ${metadata.labels} see them: all
// but the shard label, which is the platform's choice of the controllers that process the
// Workload, so that moving it to another shard changes nothing it renders to.
func UserLabels(in map[string]string) map[string]string {
	out := make(map[string]string, len(in))
	for k, v := range in {
		if k != scorev1b1.LabelShard {
			out[k] = v
		}
	}
	return out
}

// userAnnotations drops annotations that are bookkeeping, not the user's.
func userAnnotations(in map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range in {
		switch k {
		case scorev1b1.AnnotationScoreMetadata, scorev1b1.AnnotationFileSources, scorev1b1.AnnotationReconcileRequestedAt, "kubectl.kubernetes.io/last-applied-configuration":
			continue
		}
		out[k] = v
	}
	return out
}

func stringMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// toMap turns a typed value into its JSON form (numbers as int64 where whole).
func toMap(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil
	}
	return wholeNumbers(out)
}

func wholeNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = wholeNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = wholeNumbers(e)
		}
	case float64:
		if x == float64(int64(x)) {
			return int64(x)
		}
	}
	return v
}

// Object decodes a free-form JSON object (params, metadata, outputs); absent is empty.
func Object(j *apiextensionsv1.JSON) (map[string]any, error) {
	m := map[string]any{}
	if j == nil || len(j.Raw) == 0 {
		return m, nil
	}
	if err := json.Unmarshal(j.Raw, &m); err != nil {
		return nil, err
	}
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

// SameJSON compares two values by their JSON form, so that JSON fields the API server
// re-encodes compare by content.
func SameJSON(a, b any) bool {
	var x, y any
	ab, err1 := json.Marshal(a)
	bb, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil || json.Unmarshal(ab, &x) != nil || json.Unmarshal(bb, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
