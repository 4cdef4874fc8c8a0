package why

import (
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/health"
)

// How the live objects in the way are described: each kind in its own words (replica counts,
// conditions, a pod's scheduling and its containers' states, a route's parents), followed to
// what holds it in turn (a workload's pods, a pod's volume claims, a route's Gateway, a
// Gateway's class). waiting says whether the object still waits for something.

// describe says what u's state is, what holds it and whether it waits.
func (t *reading) describe(u *unstructured.Unstructured) (says string, because []Blocker, waiting bool) {
	switch gk := u.GroupVersionKind().GroupKind(); {
	case gk.Group == "apps" && gk.Kind == "Deployment":
		return t.deployment(u)
	case gk.Group == "apps" && gk.Kind == "StatefulSet":
		return t.statefulSet(u)
	case gk.Group == "apps" && (gk.Kind == "DaemonSet" || gk.Kind == "ReplicaSet"):
		return t.replicated(u)
	case gk.Group == "batch" && gk.Kind == "Job":
		return t.job(u)
	case gk.Group == "" && gk.Kind == "Pod":
		var p corev1.Pod
		if convert(u, &p) {
			says, waiting := podSays(&p)
			return says, t.podVolumes(&p), waiting
		}
	case gk.Group == "" && gk.Kind == "PersistentVolumeClaim":
		return t.volumeClaim(u)
	case gk.Group == "" && gk.Kind == "Service":
		return service(u)
	case gk.Group == "networking.k8s.io" && gk.Kind == "Ingress":
		return t.ingress(u)
	case gk.Group == "gateway.networking.k8s.io" && gk.Kind == "HTTPRoute":
		return t.route(u)
	case gk.Group == "gateway.networking.k8s.io" && gk.Kind == "Gateway":
		return t.gateway(u)
	case gk.Group == "gateway.networking.k8s.io" && gk.Kind == "GatewayClass":
		return accepted(u, "its controller "+str(u, "spec", "controllerName"))
	}
	return generic(u)
}

// convert reads u into a typed object.
func convert(u *unstructured.Unstructured, into any) bool {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into) == nil
}

func str(u *unstructured.Unstructured, fields ...string) string {
	s, _, _ := unstructured.NestedString(u.Object, fields...)
	return s
}

// generic is kstatus's word on an object of a kind the trace has no words for, with its
// conditions that are not as they should be.
func generic(u *unstructured.Unstructured) (string, []Blocker, bool) {
	state, message := (*health.Checker)(nil).Judge(u)
	says := strings.ToLower(state)
	if message != "" {
		says += ": " + message
	}
	return says, nil, state != scorev1b1.HealthCurrent
}

func (t *reading) deployment(u *unstructured.Unstructured) (string, []Blocker, bool) {
	var d appsv1.Deployment
	if !convert(u, &d) {
		return generic(u)
	}
	want := ptr.Deref(d.Spec.Replicas, 1)
	s := d.Status
	says := fmt.Sprintf("%d of %d replicas ready, %d updated, %d available", s.ReadyReplicas, want, s.UpdatedReplicas, s.AvailableReplicas)
	if s.Replicas > want {
		says += fmt.Sprintf(", %d in all: a rollout is under way", s.Replicas)
	}
	for _, c := range s.Conditions {
		bad := c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue ||
			c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse ||
			c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionFalse
		if bad {
			says += fmt.Sprintf("; %s=%s (%s): %s", c.Type, c.Status, c.Reason, c.Message)
		}
	}
	waiting := s.ObservedGeneration < d.Generation || s.UpdatedReplicas < want || s.AvailableReplicas < want || s.Replicas > s.UpdatedReplicas
	return says, t.pods(u, d.Spec.Selector, want > 0, false), waiting
}

func (t *reading) statefulSet(u *unstructured.Unstructured) (string, []Blocker, bool) {
	var s appsv1.StatefulSet
	if !convert(u, &s) {
		return generic(u)
	}
	want := ptr.Deref(s.Spec.Replicas, 1)
	says := fmt.Sprintf("%d of %d replicas ready", s.Status.ReadyReplicas, want)
	if s.Status.UpdatedReplicas < want && s.Status.UpdateRevision != s.Status.CurrentRevision {
		says += fmt.Sprintf(", %d updated", s.Status.UpdatedReplicas)
	}
	waiting := s.Status.ObservedGeneration < s.Generation || s.Status.ReadyReplicas < want || s.Status.UpdatedReplicas < want
	return says, t.pods(u, s.Spec.Selector, want > 0, false), waiting
}

// replicated describes a DaemonSet or a ReplicaSet.
func (t *reading) replicated(u *unstructured.Unstructured) (string, []Blocker, bool) {
	var selector *metav1.LabelSelector
	var ready, want int32
	switch u.GetKind() {
	case "DaemonSet":
		var d appsv1.DaemonSet
		if !convert(u, &d) {
			return generic(u)
		}
		selector, ready, want = d.Spec.Selector, d.Status.NumberReady, d.Status.DesiredNumberScheduled
	default:
		var r appsv1.ReplicaSet
		if !convert(u, &r) {
			return generic(u)
		}
		selector, ready, want = r.Spec.Selector, r.Status.ReadyReplicas, ptr.Deref(r.Spec.Replicas, 1)
	}
	return fmt.Sprintf("%d of %d ready", ready, want), t.pods(u, selector, want > 0, false), ready < want
}

func (t *reading) job(u *unstructured.Unstructured) (string, []Blocker, bool) {
	var j batchv1.Job
	if !convert(u, &j) {
		return generic(u)
	}
	s := j.Status
	says := fmt.Sprintf("%d active, %d failed, %d succeeded", s.Active, s.Failed, s.Succeeded)
	waiting := true
	if c := lastCondition(j.Status.Conditions); c != nil {
		says = fmt.Sprintf("%s (%s): %s; %s", c.Type, c.Reason, c.Message, says)
		waiting = c.Type != batchv1.JobComplete
	}
	return says, t.pods(u, j.Spec.Selector, true, true), waiting
}

// lastCondition is the Job's condition that is True and changed last.
func lastCondition(conds []batchv1.JobCondition) *batchv1.JobCondition {
	var last *batchv1.JobCondition
	for i := range conds {
		c := &conds[i]
		if c.Status == corev1.ConditionTrue && (last == nil || !c.LastTransitionTime.Before(&last.LastTransitionTime)) {
			last = c
		}
	}
	return last
}

// pods names the pods of a workload object, by its selector, that are not ready (for a Job,
// those that failed or still run), up to shownPods. With none at all, the object's own events
// say why (a pod refused at creation, a volume claim that cannot be made).
func (t *reading) pods(owner *unstructured.Unstructured, selector *metav1.LabelSelector, wanted, job bool) []Blocker {
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil || selector == nil {
		return nil
	}
	res, ok := t.get(listRead("v1", "Pod", owner.GetNamespace(), List{Labels: sel.String(), Limit: podLimit}))
	switch {
	case !ok:
		return nil
	case res.Denied:
		return []Blocker{{What: "its pods", Says: "not read: your rights do not let you list pods in " + owner.GetNamespace()}}
	case res.Err != "":
		return []Blocker{{What: "its pods", Says: "not read: " + res.Err}}
	}
	var out []Blocker
	seen := 0
	for _, o := range res.Objects {
		var p corev1.Pod
		if !convert(o, &p) {
			continue
		}
		seen++
		says, waiting := podSays(&p)
		if !waiting || len(out) == shownPods {
			continue
		}
		out = append(out, Blocker{What: "Pod " + p.Namespace + "/" + p.Name, Says: says, Because: t.podVolumes(&p)})
	}
	if seen == 0 && wanted && !job {
		says := "none exist"
		if e := t.event(owner); e != "" {
			says += "; its last event: " + e
		}
		out = append(out, Blocker{What: "its pods", Says: says})
	}
	return out
}

// podSays is a pod's state in its own words: why it is not scheduled, its containers waiting
// or terminated, the reason it failed. waiting is a pod not ready (or, for a run, not done).
func podSays(p *corev1.Pod) (string, bool) {
	if p.DeletionTimestamp != nil {
		return "terminating", true
	}
	phase := string(p.Status.Phase)
	if p.Status.Phase == corev1.PodSucceeded {
		return phase, false
	}
	var parts []string
	for _, c := range p.Status.Conditions {
		// A pod that ended is past scheduling: how it ended is what counts.
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && p.Status.Phase != corev1.PodFailed {
			parts = append(parts, fmt.Sprintf("not scheduled (%s): %s", c.Reason, c.Message))
		}
	}
	for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if s := containerSays(cs); s != "" {
			parts = append(parts, s)
		}
	}
	if p.Status.Reason != "" || p.Status.Message != "" {
		parts = append(parts, strings.TrimSpace(fmt.Sprintf("%s %s", p.Status.Reason, p.Status.Message)))
	}
	ready := false
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			ready = true
		}
	}
	if len(parts) == 0 {
		if ready {
			return phase + ", ready", false
		}
		return phase + ", not ready", true
	}
	return phase + " — " + strings.Join(parts, "; "), !ready
}

// containerSays is a container's state when it is in the way: waiting, terminated with an
// error, restarting, or running and not ready.
func containerSays(cs corev1.ContainerStatus) string {
	switch s := cs.State; {
	case s.Waiting != nil:
		out := fmt.Sprintf("container %s waiting (%s)", cs.Name, s.Waiting.Reason)
		if s.Waiting.Message != "" {
			out += ": " + s.Waiting.Message
		}
		if last := cs.LastTerminationState.Terminated; last != nil {
			out += fmt.Sprintf("; restarted %d times, last exit %d (%s)", cs.RestartCount, last.ExitCode, last.Reason)
		}
		return out
	case s.Terminated != nil && s.Terminated.ExitCode != 0:
		out := fmt.Sprintf("container %s terminated (%s, exit code %d)", cs.Name, s.Terminated.Reason, s.Terminated.ExitCode)
		if s.Terminated.Message != "" {
			out += ": " + s.Terminated.Message
		}
		return out
	case s.Running != nil && !cs.Ready:
		return fmt.Sprintf("container %s running, not ready", cs.Name)
	}
	return ""
}

// podVolumes are the volume claims of a pod not scheduled that are not bound: the scheduler
// waits for them.
func (t *reading) podVolumes(p *corev1.Pod) []Blocker {
	scheduled := true
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			scheduled = false
		}
	}
	if scheduled {
		return nil
	}
	var out []Blocker
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim == nil || len(out) == maxVolumes {
			continue
		}
		r := Ref{APIVersion: "v1", Kind: "PersistentVolumeClaim", Namespace: p.Namespace, Name: v.PersistentVolumeClaim.ClaimName}
		res, ok := t.get(getRead(r))
		switch {
		case !ok:
		case res.Missing:
			out = append(out, Blocker{What: r.String(), Says: "does not exist"})
		case len(res.Objects) == 1:
			if says, because, waiting := t.volumeClaim(res.Objects[0]); waiting {
				out = append(out, Blocker{What: r.String(), Says: says, Because: because})
			}
		}
	}
	return out
}

func (t *reading) volumeClaim(u *unstructured.Unstructured) (string, []Blocker, bool) {
	phase := str(u, "status", "phase")
	if phase == string(corev1.ClaimBound) {
		return phase, nil, false
	}
	says := phase
	if says == "" {
		says = "Pending"
	}
	if class := str(u, "spec", "storageClassName"); class != "" {
		says += " (storage class " + class + ")"
	}
	// A claim's status never says why it waits; the volume controller's events do.
	if e := t.event(u); e != "" {
		says += " — " + e
	}
	return says, nil, true
}

// event is the object's latest warning, else its latest event ("Reason: message"), "" when it
// has none or they were not read.
func (t *reading) event(u *unstructured.Unstructured) string {
	if u.GetUID() == "" {
		return ""
	}
	res, ok := t.get(listRead("v1", "Event", u.GetNamespace(), List{Fields: "involvedObject.uid=" + string(u.GetUID()), Limit: eventLimit}))
	if !ok || len(res.Objects) == 0 {
		return ""
	}
	events := make([]corev1.Event, 0, len(res.Objects))
	for _, o := range res.Objects {
		var e corev1.Event
		if convert(o, &e) {
			events = append(events, e)
		}
	}
	sort.SliceStable(events, func(i, j int) bool {
		if wi, wj := events[i].Type == corev1.EventTypeWarning, events[j].Type == corev1.EventTypeWarning; wi != wj {
			return wi
		}
		return eventTime(events[j]) < eventTime(events[i])
	})
	if len(events) == 0 {
		return ""
	}
	return events[0].Reason + ": " + events[0].Message
}

// eventTime is when an event last happened, in Unix nanoseconds.
func eventTime(e corev1.Event) int64 {
	switch {
	case e.Series != nil:
		return e.Series.LastObservedTime.UnixNano()
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.UnixNano()
	}
	return e.EventTime.UnixNano()
}

// service describes a Service: one of type LoadBalancer waits for an address.
func service(u *unstructured.Unstructured) (string, []Blocker, bool) {
	if str(u, "spec", "type") != string(corev1.ServiceTypeLoadBalancer) {
		return "type " + orDefault(str(u, "spec", "type"), "ClusterIP"), nil, false
	}
	if lbs, _, _ := unstructured.NestedSlice(u.Object, "status", "loadBalancer", "ingress"); len(lbs) > 0 {
		return "its load balancer has an address", nil, false
	}
	return "no load balancer address yet: nothing in the cluster has provisioned one", nil, true
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func (t *reading) ingress(u *unstructured.Unstructured) (string, []Blocker, bool) {
	if lbs, _, _ := unstructured.NestedSlice(u.Object, "status", "loadBalancer", "ingress"); len(lbs) > 0 {
		return "has an address", nil, false
	}
	class := str(u, "spec", "ingressClassName")
	if class == "" {
		return "no address yet: no ingress controller has taken it (it names no class)", nil, true
	}
	says := "no address yet: no ingress controller of class " + class + " has given it one"
	r := Ref{APIVersion: "networking.k8s.io/v1", Kind: "IngressClass", Name: class}
	res, ok := t.get(getRead(r))
	if ok && res.Missing {
		return says, []Blocker{{What: r.String(), Says: "does not exist: no ingress controller is installed for it"}}, true
	}
	if ok && len(res.Objects) == 1 {
		return says, []Blocker{{What: r.String(), Says: "its controller " + str(res.Objects[0], "spec", "controller") + " has not answered"}}, true
	}
	return says, nil, true
}

// route describes an HTTPRoute by what its parents answered, and follows its parentRefs to the
// Gateways.
func (t *reading) route(u *unstructured.Unstructured) (string, []Blocker, bool) {
	parents, _, _ := unstructured.NestedSlice(u.Object, "status", "parents")
	var said []string
	acceptedBy := 0
	for _, p := range parents {
		m, _ := p.(map[string]any)
		name, _, _ := unstructured.NestedString(m, "parentRef", "name")
		ns, _, _ := unstructured.NestedString(m, "parentRef", "namespace")
		conds, _, _ := unstructured.NestedSlice(m, "conditions")
		for _, c := range conds {
			cm, _ := c.(map[string]any)
			typ, status := fmt.Sprint(cm["type"]), fmt.Sprint(cm["status"])
			if typ == "Accepted" && status == "True" {
				acceptedBy++
			}
			if status != "True" {
				said = append(said, fmt.Sprintf("parent %s: %s=%s (%v): %v", orDefault(ns, u.GetNamespace())+"/"+name, typ, status, cm["reason"], cm["message"]))
			}
		}
	}
	if acceptedBy > 0 {
		return fmt.Sprintf("accepted by %d parent(s)", acceptedBy), nil, false
	}
	says := "no parent has accepted it: no gateway controller has reported on it"
	if len(said) > 0 {
		says = "no parent has accepted it: " + strings.Join(said, "; ")
	}
	var because []Blocker
	for _, r := range parentGateways(u) {
		res, ok := t.get(getRead(r))
		switch {
		case !ok:
		case res.Missing:
			because = append(because, Blocker{What: r.String(), Says: "does not exist"})
		case res.Denied:
			because = append(because, Blocker{What: r.String(), Says: "not read: your rights do not let you read it"})
		case len(res.Objects) == 1:
			s, b, waiting := t.gateway(res.Objects[0])
			if waiting {
				because = append(because, Blocker{What: r.String(), Says: s, Because: b})
			}
		}
	}
	return says, because, true
}

// parentGateways are the Gateways an HTTPRoute's parentRefs name, up to two.
func parentGateways(u *unstructured.Unstructured) []Ref {
	refs, _, _ := unstructured.NestedSlice(u.Object, "spec", "parentRefs")
	var out []Ref
	for _, r := range refs {
		m, _ := r.(map[string]any)
		kind, _ := m["kind"].(string)
		group, hasGroup := m["group"].(string)
		if kind != "" && kind != "Gateway" || hasGroup && group != "gateway.networking.k8s.io" {
			continue
		}
		name, _ := m["name"].(string)
		ns, _ := m["namespace"].(string)
		if name == "" || len(out) == 2 {
			continue
		}
		out = append(out, Ref{APIVersion: "gateway.networking.k8s.io/v1", Kind: "Gateway", Namespace: orDefault(ns, u.GetNamespace()), Name: name})
	}
	return out
}

// gateway describes a Gateway by its Programmed and Accepted conditions, and follows its class.
func (t *reading) gateway(u *unstructured.Unstructured) (string, []Blocker, bool) {
	class := str(u, "spec", "gatewayClassName")
	says, _, waiting := accepted(u, "a gateway controller of class "+class)
	if !waiting {
		return says, nil, false
	}
	r := Ref{APIVersion: "gateway.networking.k8s.io/v1", Kind: "GatewayClass", Name: class}
	res, ok := t.get(getRead(r))
	switch {
	case class == "" || !ok:
		return says, nil, true
	case res.Missing:
		return says, []Blocker{{What: r.String(), Says: "does not exist: no gateway controller is installed for it"}}, true
	case len(res.Objects) == 1:
		if s, _, classWaiting := accepted(res.Objects[0], "its controller "+str(res.Objects[0], "spec", "controllerName")); classWaiting {
			return says, []Blocker{{What: r.String(), Says: s}}, true
		}
	}
	return says, nil, true
}

// accepted describes a Gateway API object by its conditions: in the way until Accepted (and
// Programmed, when it has one) are True; who names the controller expected to answer.
func accepted(u *unstructured.Unstructured, who string) (string, []Blocker, bool) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	var bad []string
	good := 0
	for _, c := range conds {
		cm, _ := c.(map[string]any)
		typ, status := fmt.Sprint(cm["type"]), fmt.Sprint(cm["status"])
		if typ != "Accepted" && typ != "Programmed" {
			continue
		}
		if status == "True" {
			good++
			continue
		}
		bad = append(bad, fmt.Sprintf("%s=%s (%v): %v", typ, status, cm["reason"], cm["message"]))
	}
	switch {
	case len(bad) > 0:
		return strings.Join(bad, "; "), nil, true
	case good > 0:
		return "accepted", nil, false
	}
	// The API server defaults Accepted to Unknown ("Waiting for controller"): no controller
	// has written anything since.
	return "no answer from " + who, nil, true
}

// quotas are the namespace's ResourceQuotas, each with its use: those at their limit first.
func (t *reading) quotas(ns string) []Blocker {
	res, ok := t.get(listRead("v1", "ResourceQuota", ns, List{Limit: quotaLimit}))
	switch {
	case !ok:
		return nil
	case res.Denied:
		return []Blocker{{What: "ResourceQuotas in " + ns, Says: "not read: your rights do not let you list them"}}
	case res.Err != "":
		return []Blocker{{What: "ResourceQuotas in " + ns, Says: "not read: " + res.Err}}
	case len(res.Objects) == 0:
		return []Blocker{{What: "ResourceQuotas in " + ns, Says: "none (the quota that refused it is gone, or it was another namespace's)"}}
	}
	var out []Blocker
	for _, o := range res.Objects {
		var q corev1.ResourceQuota
		if !convert(o, &q) {
			continue
		}
		var full, rest []string
		for _, name := range sortedResources(q.Status.Hard) {
			hard, used := q.Status.Hard[name], q.Status.Used[name]
			s := fmt.Sprintf("%s %s of %s used", name, used.String(), hard.String())
			if used.Cmp(hard) >= 0 {
				full = append(full, s+" (at its limit)")
			} else {
				rest = append(rest, s)
			}
		}
		out = append(out, Blocker{What: "ResourceQuota " + q.Namespace + "/" + q.Name, Says: strings.Join(append(full, rest...), ", ")})
	}
	return out
}

func sortedResources(l corev1.ResourceList) []corev1.ResourceName {
	out := make([]corev1.ResourceName, 0, len(l))
	for k := range l {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
