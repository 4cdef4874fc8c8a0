package planner

import (
	"reflect"
	"testing"

	"k8s.io/utils/ptr"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
)

// A probe's host passed through to the pod would have the kubelet probe, say, the cloud's
// metadata address for the tenant. It is refused before anything is claimed, unless the
// platform admits probe hosts in the Workload's namespace.
func TestCheckInputsRefusesAProbeHost(t *testing.T) {
	probed := withContainer("main", scorev1b1.Container{Image: "nginx",
		LivenessProbe:  &scorev1b1.ContainerProbe{HTTPGet: &scorev1b1.HTTPProbe{Host: ptr.To("169.254.169.254"), Path: "/latest/meta-data/", Port: 80}},
		ReadinessProbe: &scorev1b1.ContainerProbe{HTTPGet: &scorev1b1.HTTPProbe{Path: "/ready", Port: 8080}}})
	for _, tc := range []struct {
		name    string
		w       *scorev1b1.Workload
		allowed Allowed
		want    []string
	}{
		{name: "a probe without a host", w: workload(withContainer("main", scorev1b1.Container{Image: "nginx",
			ReadinessProbe: &scorev1b1.ContainerProbe{HTTPGet: &scorev1b1.HTTPProbe{Path: "/ready", Port: 8080}}}))},
		{name: "a probe host", w: workload(probed),
			want: []string{`spec.containers.main.livenessProbe.httpGet.host: The platform does not allow a probe to name a host in this namespace: the kubelet would send it to "169.254.169.254" from the node; leave host out to probe the container.`}},
		{name: "a probe host where the platform admits them", w: workload(probed), allowed: Allowed{ProbeHosts: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, p := range CheckInputs(tc.w, tc.allowed) {
				got = append(got, p.String())
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("problems\n  got:  %q\n  want: %q", got, tc.want)
			}
		})
	}
}

// The plan carries its backend's kinds and pods, and probe hosts where the platform admits
// them: what the runtime checks the render against.
func TestBuildPlanCarriesTheBackendsPods(t *testing.T) {
	backend := orchconfig.Backend{BackendID: "k8s-web", RuntimeClass: "kubernetes", Template: orchconfig.Template{Kind: "manifests", Ref: "configmap://score-system/t/web.yaml"}}
	withPods := backend
	withPods.Kinds = []string{"Deployment.apps", "Service"}
	withPods.Pods = &orchconfig.Pods{ServiceAccountName: "web-reader", ServiceAccountToken: true, Allow: []string{"seccomp"}}
	for _, tc := range []struct {
		name       string
		backend    orchconfig.Backend
		probeHosts bool
		kinds      []string
		pods       *scorev1b1.PlanPods
	}{
		{name: "a backend that says nothing", backend: backend},
		{name: "probe hosts admitted", backend: backend, probeHosts: true, pods: &scorev1b1.PlanPods{Allow: []string{"probeHosts"}}},
		{name: "the backend's kinds and pods", backend: withPods, kinds: []string{"Deployment.apps", "Service"},
			pods: &scorev1b1.PlanPods{ServiceAccountName: "web-reader", ServiceAccountToken: true, Allow: []string{"seccomp"}}},
		{name: "the backend's pods and probe hosts", backend: withPods, probeHosts: true, kinds: []string{"Deployment.apps", "Service"},
			pods: &scorev1b1.PlanPods{ServiceAccountName: "web-reader", ServiceAccountToken: true, Allow: []string{"seccomp", "probeHosts"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := BuildPlan(PlanInput{Workload: workload(), Backend: tc.backend, ProbeHosts: tc.probeHosts})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(res.Spec.Kinds, tc.kinds) || !reflect.DeepEqual(res.Spec.Pods, tc.pods) {
				t.Fatalf("kinds %v pods %+v, want %v %+v", res.Spec.Kinds, res.Spec.Pods, tc.kinds, tc.pods)
			}
		})
	}
	// The backend's lists are the config's: a plan never aliases them.
	res, _ := BuildPlan(PlanInput{Workload: workload(), Backend: withPods, ProbeHosts: true})
	if withPods.Pods.Allow[0] != "seccomp" || len(withPods.Pods.Allow) != 1 || &res.Spec.Kinds[0] == &withPods.Kinds[0] {
		t.Fatal("the plan shares the backend's lists")
	}
}
