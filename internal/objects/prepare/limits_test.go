package prepare

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/podrules"
)

// withPod gives an object the pod template spec (a Deployment's, a Job's).
func withPod(spec map[string]any) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		u.Object["spec"] = map[string]any{"template": map[string]any{"spec": spec}}
	}
}

func pod(extra map[string]any) map[string]any {
	spec := map[string]any{"containers": []any{map[string]any{"name": "main", "image": "nginx"}}}
	for k, v := range extra {
		spec[k] = v
	}
	return spec
}

// What an owner may create beyond allowedKinds: its own kinds, and pods within the pod rules
// and its allowances. A refusal is ErrNotAllowed (PermissionDenied) naming the object.
func TestPrepareLimits(t *testing.T) {
	plan := func(kinds []string, pods *scorev1b1.PlanPods) *scorev1b1.WorkloadPlan {
		return &scorev1b1.WorkloadPlan{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web", UID: "plan-uid"},
			Spec: scorev1b1.WorkloadPlanSpec{WorkloadRef: scorev1b1.LocalWorkloadRef{Name: "web", UID: "wl-uid"}, Kinds: kinds, Pods: pods}}
	}
	instance := func(kinds []string, pods podrules.Policy) Marks {
		m := InstanceMarks("team", "abc")
		m.Kinds, m.Pods = kinds, pods
		return m
	}
	for _, tc := range []struct {
		name    string
		objs    []*unstructured.Unstructured
		marks   Marks
		refused string
	}{
		{name: "a plan's kinds, and the runtime's ConfigMaps and Secrets",
			objs:  []*unstructured.Unstructured{object("apps/v1", "Deployment", "web", withPod(pod(nil))), object("v1", "ConfigMap", "web-files"), object("v1", "Secret", "web-secret-files")},
			marks: PlanMarks(plan([]string{"Deployment.apps", "Service"}, nil))},
		{name: "a kind the plan does not list",
			objs:    []*unstructured.Unstructured{object("apps/v1", "Deployment", "web", withPod(pod(nil))), object("batch/v1", "Job", "migrate", withPod(pod(nil)))},
			marks:   PlanMarks(plan([]string{"Deployment.apps", "Service"}, nil)),
			refused: "Job migrate is of a kind its backend or definition does not list (kinds: Deployment.apps, Service, ConfigMap, Secret)"},
		{name: "a definition's kinds are its own",
			objs:    []*unstructured.Unstructured{object("v1", "PersistentVolumeClaim", "data"), object("v1", "Secret", "extra")},
			marks:   instance([]string{"PersistentVolumeClaim"}, podrules.Policy{}),
			refused: "Secret extra is of a kind its backend or definition does not list (kinds: PersistentVolumeClaim)"},
		{name: "no kinds: allowedKinds alone",
			objs:  []*unstructured.Unstructured{object("batch/v1", "Job", "migrate", withPod(pod(nil)))},
			marks: PlanMarks(plan(nil, nil))},
		{name: "a plan's pod on the host's network",
			objs:    []*unstructured.Unstructured{object("v1", "ConfigMap", "web-files"), object("apps/v1", "Deployment", "web", withPod(pod(map[string]any{"hostNetwork": true})))},
			marks:   PlanMarks(plan(nil, nil)),
			refused: `Deployment web: spec.template.spec: host namespaces (hostNetwork=true), which the pod rule "hostNamespaces" refuses (pods.allow does not list it)`},
		{name: "a plan's pods may do what it allows",
			objs:  []*unstructured.Unstructured{object("apps/v1", "Deployment", "web", withPod(pod(map[string]any{"hostNetwork": true, "serviceAccountName": "web"})))},
			marks: PlanMarks(plan(nil, &scorev1b1.PlanPods{ServiceAccountName: "web", Allow: []string{podrules.HostNamespaces}}))},
		{name: "an instance's pod as another ServiceAccount",
			objs:    []*unstructured.Unstructured{object("apps/v1", "StatefulSet", "db", withPod(pod(map[string]any{"serviceAccountName": "deployer"})))},
			marks:   instance(nil, podrules.Policy{}),
			refused: `StatefulSet db: spec.template.spec.serviceAccountName: the pods may run as the namespace's default ServiceAccount only (pods.serviceAccountName names none), not "deployer"`},
		{name: "an instance's pod as the ServiceAccount its definition names",
			objs:  []*unstructured.Unstructured{object("apps/v1", "StatefulSet", "db", withPod(pod(map[string]any{"serviceAccountName": "db"})))},
			marks: instance(nil, podrules.Policy{ServiceAccountName: "db"})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Prepare(Input{Objects: tc.objs, Marks: tc.marks, Scope: OfflineScope})
			switch {
			case tc.refused == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.refused != "" && err == nil:
				t.Fatal("admitted")
			case tc.refused != "" && (err.Error() != tc.refused || !errors.Is(err, ErrNotAllowed)):
				t.Fatalf("refusal\n  got:  %v\n  want: %s (ErrNotAllowed)", err, tc.refused)
			}
		})
	}
}
