package workloaddecision

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// probed gives the main container a probe that names a host.
func probed(w *scorev1b1.Workload) {
	c := w.Spec.Containers["main"]
	c.LivenessProbe = &scorev1b1.ContainerProbe{HTTPGet: &scorev1b1.HTTPProbe{Host: ptr.To("169.254.169.254"), Path: "/", Port: 80}}
	w.Spec.Containers["main"] = c
}

// A probe that names a host is SpecInvalid, nothing written but the status, unless the
// platform admits probe hosts in the Workload's namespace (Observed.ProbeHosts): then its plan
// allows the pod rule probeHosts, so that the runtime applies the probe.
func TestProbeHostsFollowTheNamespace(t *testing.T) {
	o := fresh(t, probed, withFinalizer)
	d, writes := drive(t, o, answers{})
	c := meta.FindStatusCondition(d.Status.Conditions, scorev1b1.ConditionInputsValid)
	if len(writes) != 0 || c == nil || c.Reason != string(scorev1b1.ReasonSpecInvalid) || !strings.Contains(c.Message, "spec.containers.main.livenessProbe.httpGet.host: The platform does not allow a probe to name a host") {
		t.Fatalf("writes %v, InputsValid %+v", writes, c)
	}

	o = fresh(t, probed, withFinalizer)
	o.ProbeHosts = true
	d = From(o)
	if d.Next != WriteExposure {
		t.Fatalf("%s, want the exposure written", d.Next)
	}
	o.Exposure = exposureOf(o.Workload, d.Exposure.Spec, endpoint)
	if d = From(o); d.Next != WritePlan || d.Plan.Spec.Pods == nil || !slices.Contains(d.Plan.Spec.Pods.Allow, "probeHosts") {
		t.Fatalf("%s, want a plan that allows probe hosts: %+v", d.Next, d.Plan)
	}
}
