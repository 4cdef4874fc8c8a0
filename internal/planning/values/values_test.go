package values

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

func TestCompose(t *testing.T) {
	cases := []struct {
		name   string
		layers []map[string]any
		want   map[string]any
	}{
		{"nothing", nil, map[string]any{}},
		{"defaults only", []map[string]any{{"replicas": 1}}, map[string]any{"replicas": 1}},
		{"workload wins over defaults", []map[string]any{{"replicas": 1, "a": "d"}, {"a": "w"}}, map[string]any{"replicas": 1, "a": "w"}},
		{"outputs win over workload", []map[string]any{{"a": "d"}, {"a": "w"}, {"a": "o"}}, map[string]any{"a": "o"}},
		{"maps merge deeply", []map[string]any{{"service": map[string]any{"type": "ClusterIP", "ports": map[string]any{"a": 1}}}, {"service": map[string]any{"ports": map[string]any{"b": 2}}}},
			map[string]any{"service": map[string]any{"type": "ClusterIP", "ports": map[string]any{"a": 1, "b": 2}}}},
		{"lists replace", []map[string]any{{"l": []any{1, 2}}}, map[string]any{"l": []any{1, 2}}},
		{"a later list replaces an earlier one", []map[string]any{{"l": []any{1, 2}}, {"l": []any{3}}}, map[string]any{"l": []any{3}}},
		{"a map replaces a scalar", []map[string]any{{"x": "s"}, {"x": map[string]any{"k": 1}}}, map[string]any{"x": map[string]any{"k": 1}}},
		{"a scalar replaces a map", []map[string]any{{"x": map[string]any{"k": 1}}, {"x": "s"}}, map[string]any{"x": "s"}},
		{"null wins too", []map[string]any{{"x": "s"}, {"x": nil}}, map[string]any{"x": nil}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Compose(tc.layers...)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("want %v, got %v", tc.want, got)
			}
		})
	}
}

func TestComposeDoesNotChangeItsInputs(t *testing.T) {
	defaults := map[string]any{"service": map[string]any{"type": "ClusterIP"}}
	w := map[string]any{"service": map[string]any{"ports": map[string]any{"a": 1}}}
	out := Compose(defaults, w)
	out["service"].(map[string]any)["type"] = "changed"
	if defaults["service"].(map[string]any)["type"] != "ClusterIP" || len(defaults["service"].(map[string]any)) != 1 {
		t.Fatalf("defaults changed: %v", defaults)
	}
}

func TestNormalize(t *testing.T) {
	w := &scorev1b1.Workload{
		// The shard is where the Workload is processed: in the values, moving it would roll it out.
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Labels: map[string]string{"team": "a", scorev1b1.LabelShard: "blue"},
			Annotations: map[string]string{"x": "y", scorev1b1.AnnotationScoreMetadata: "{}",
				// A reconcile request is bookkeeping: in the values it would rewrite the plan on every request.
				scorev1b1.AnnotationReconcileRequestedAt: "now"}},
		Spec: scorev1b1.WorkloadSpec{
			Containers: map[string]scorev1b1.Container{
				"main":  {Image: "nginx", Resources: &scorev1b1.ContainerResources{Limits: &scorev1b1.ResourcesLimits{CPU: ptr.To("1")}}},
				"build": {Image: "."},
			},
			Service: &scorev1b1.Service{Ports: map[string]scorev1b1.ServicePort{
				"http": {Port: 80},
				"dns":  {Port: 53, TargetPort: ptr.To[int32](5353), Protocol: ptr.To("UDP")},
			}},
		},
	}
	got := Normalize(w)
	want := map[string]any{
		"workload": map[string]any{"name": "web", "namespace": "ns", "labels": map[string]any{"team": "a"}, "annotations": map[string]any{"x": "y"}},
		"containers": map[string]any{
			"main":  map[string]any{"image": "nginx", "resources": map[string]any{"limits": map[string]any{"cpu": "1"}}},
			"build": map[string]any{},
		},
		"service": map[string]any{"ports": map[string]any{
			"http": map[string]any{"port": int64(80), "targetPort": int64(80), "protocol": "TCP"},
			"dns":  map[string]any{"port": int64(53), "targetPort": int64(5353), "protocol": "UDP"},
		}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("want %#v\ngot  %#v", want, got)
	}
}
