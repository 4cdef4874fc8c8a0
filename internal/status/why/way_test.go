package why

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// world is a cluster as a table test gives it: the objects a reader would find, and the kinds
// the reader may not read. answer plays the reader (internal/cli/whyobserve) over it, reading
// what Next names until it names nothing, as the reader does.
type world struct {
	objects []*unstructured.Unstructured
	denied  map[string]bool // by kind
}

func (w world) read(r Read) Result {
	if w.denied[r.Ref.Kind] {
		return Result{Denied: true}
	}
	if r.List.Limit == 0 {
		for _, o := range w.objects {
			if ref(o) == r.Ref {
				if r.MetadataOnly {
					m := &unstructured.Unstructured{}
					m.SetAPIVersion(o.GetAPIVersion())
					m.SetKind(o.GetKind())
					m.SetNamespace(o.GetNamespace())
					m.SetName(o.GetName())
					return Result{Objects: []*unstructured.Unstructured{m}}
				}
				return Result{Objects: []*unstructured.Unstructured{o}}
			}
		}
		return Result{Missing: true}
	}
	sel, err := labels.Parse(r.List.Labels)
	if err != nil {
		return Result{Err: err.Error()}
	}
	var out []*unstructured.Unstructured
	for _, o := range w.objects {
		if o.GetKind() != r.Ref.Kind || o.GetNamespace() != r.Ref.Namespace || !sel.Matches(labels.Set(o.GetLabels())) {
			continue
		}
		if uid, ok := strings.CutPrefix(r.List.Fields, "involvedObject.uid="); ok && str(o, "involvedObject", "uid") != uid {
			continue
		}
		if len(out) < r.List.Limit {
			out = append(out, o)
		}
	}
	return Result{Objects: out}
}

// ref is the reference to a live object.
func ref(u *unstructured.Unstructured) Ref {
	return Ref{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
}

// observe reads, as the reader does, what Next names for in until it names nothing, and
// returns in with what was read, and the reads in the order they were made.
func (w world) observe(t *testing.T, in Input) (Input, []Read) {
	t.Helper()
	in.Observed = Observed{}
	var made []Read
	for reads := Next(in); len(reads) > 0; reads = Next(in) {
		for _, r := range reads {
			if _, done := in.Observed[r]; done {
				t.Fatalf("Next named %+v again", r)
			}
			in.Observed[r] = w.read(r)
			made = append(made, r)
		}
		if len(made) > MaxReads {
			t.Fatalf("more than %d reads: %+v", MaxReads, made)
		}
	}
	return in, made
}

// object is a typed object as the API server serves it.
func object(t *testing.T, apiVersion, kind string, typed any) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	return u
}

func yamlObject(t *testing.T, doc map[string]any) *unstructured.Unstructured {
	t.Helper()
	return &unstructured.Unstructured{Object: doc}
}

const ns = "shop"

// workloadIn is a Workload named web in shop, with the given resources and Ready, InputsValid,
// ClaimsReady and RuntimeReady conditions (type=status/reason).
func workloadIn(resources map[string]scorev1b1.Resource, conds ...string) *scorev1b1.Workload {
	w := &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", UID: "w-uid", Generation: 2},
		Spec: scorev1b1.WorkloadSpec{Containers: map[string]scorev1b1.Container{"main": {Image: "nginx"}}, Resources: resources}}
	for _, c := range conds {
		typ, rest, _ := strings.Cut(c, "=")
		status, reason, _ := strings.Cut(rest, "/")
		w.Status.Conditions = append(w.Status.Conditions, metav1.Condition{Type: typ, Status: metav1.ConditionStatus(status), Reason: reason, Message: "the " + reason + " message"})
	}
	return w
}

// claimOf is the Workload's claim for key, in phase with message and resources.
func claimOf(w *scorev1b1.Workload, key, typ string, phase scorev1b1.ClaimPhase, message string, resources ...scorev1b1.AppliedObject) scorev1b1.ResourceClaim {
	return scorev1b1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-" + key + "-1a2b3c", Generation: 1,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "score.dev/v1b1", Kind: "Workload", Name: w.Name, UID: w.UID, Controller: ptr.To(true)}}},
		Spec:   scorev1b1.ResourceClaimSpec{Key: key, Type: typ},
		Status: scorev1b1.ResourceClaimStatus{ObservedGeneration: 1, Phase: phase, Message: message, Provisioner: "template://score-dev/" + typ, Resources: resources},
	}
}

func entry(apiVersion, kind, name, health, message string) scorev1b1.AppliedObject {
	return scorev1b1.AppliedObject{APIVersion: apiVersion, Kind: kind, Namespace: ns, Name: name, Health: health, Message: message}
}

func planOf(w *scorev1b1.Workload, phase scorev1b1.PlanPhase, message string, objects ...scorev1b1.AppliedObject) *scorev1b1.WorkloadPlan {
	return &scorev1b1.WorkloadPlan{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: w.Name, Generation: 1},
		Spec:   scorev1b1.WorkloadPlanSpec{WorkloadRef: scorev1b1.LocalWorkloadRef{Name: w.Name, UID: string(w.UID)}},
		Status: scorev1b1.WorkloadPlanStatus{ObservedGeneration: 1, Phase: phase, Message: message, Objects: objects}}
}

func statefulSet(t *testing.T, name string, ready int32) *unstructured.Unstructured {
	return object(t, "apps/v1", "StatefulSet", &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(name + "-uid"), Generation: 1},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}}}},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: 1, ReadyReplicas: ready, UpdatedReplicas: 1}})
}

func deployment(t *testing.T, name string, ready, updated int32) *unstructured.Unstructured {
	return object(t, "apps/v1", "Deployment", &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(name + "-uid"), Generation: 2},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 1 + ready, ReadyReplicas: ready, AvailableReplicas: ready, UpdatedReplicas: updated,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "ReplicaSetUpdated"}}}})
}

// pod is a pod of app in the given state: "unschedulable", "pull", "failed", "ready".
func pod(t *testing.T, app, name, state string, volumes ...string) *unstructured.Unstructured {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": app}}}
	for _, v := range volumes {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: v, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: v}}})
	}
	switch state {
	case "unschedulable":
		p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
			Message: "0/2 nodes are available: 2 Insufficient cpu.\npreemption: 0/2 nodes are available."}}}
	case "pull":
		p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: corev1.ConditionFalse}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "main", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "nginx:nope"`}}}}}
	case "failed":
		p.Status = corev1.PodStatus{Phase: corev1.PodFailed,
			ContainerStatuses: []corev1.ContainerStatus{{Name: "build", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1, Message: "failed to solve: repository not found"}}}}}
	case "ready":
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "main", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}
	}
	return object(t, "v1", "Pod", p)
}

func secret(t *testing.T, name string) *unstructured.Unstructured {
	return object(t, "v1", "Secret", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{"password": []byte("hunter2-do-not-print")}})
}

// wayCase is a Workload in the way of something, the world a reader finds, and what the trace
// says of it.
type wayCase struct {
	name string
	// setup builds the trace's input and the world the reader finds.
	setup func(t *testing.T) (Input, world)
	// want are the lines of In the way, in order, each as a substring of its line
	// (indentation included); absent must appear nowhere in the trace.
	want, absent []string
}

// wayCases are a Workload in the way of each kind of thing, and what the trace says.
func wayCases(t *testing.T) []wayCase {
	cfg := config(t)
	db := map[string]scorev1b1.Resource{"db": {Type: "postgres"}}
	return []wayCase{{
		name: "SpecInvalid: the Workload itself",
		setup: func(t *testing.T) (Input, world) {
			w := workloadIn(nil, "InputsValid=False/SpecInvalid", "ClaimsReady=False/SpecInvalid", "RuntimeReady=False/SpecInvalid", "Ready=False/SpecInvalid")
			return Input{Workload: w, Config: cfg}, world{}
		},
		want: []string{"  Workload shop/web: its own specification (generation 2), as the message above says"},
	}, {
		name: "RuntimeSelecting: the config has no backend that fits",
		setup: func(t *testing.T) (Input, world) {
			w := workloadIn(nil, "InputsValid=True/Succeeded", "ClaimsReady=True/Succeeded", "RuntimeReady=False/RuntimeSelecting", "Ready=False/RuntimeSelecting")
			w.Annotations = map[string]string{scorev1b1.AnnotationProfile: "web-service", scorev1b1.AnnotationRequirements: "gpu"}
			return Input{Workload: w, Config: cfg, ConfigSource: "score-system/orchestrator-config"}, world{}
		},
		want: []string{"  Orchestrator Config score-system/orchestrator-config: no backend of profile web-service fits this Workload"},
	}, {
		name: "ClaimFailed: the claim and the provisioner's message",
		setup: func(t *testing.T) (Input, world) {
			w := workloadIn(map[string]scorev1b1.Resource{"env": {Type: "environment"}}, "InputsValid=True/Succeeded", "ClaimsReady=False/ClaimFailed", "RuntimeReady=False/ClaimPending", "Ready=False/ClaimFailed")
			c := claimOf(w, "env", "environment", scorev1b1.ClaimPhaseFailed, `Provisioner template://score-dev/environment: secret score-environment referenced by an output: secrets "score-environment" not found.`)
			return Input{Workload: w, Config: cfg, Claims: []scorev1b1.ResourceClaim{c}}, world{}
		},
		want: []string{`  ResourceClaim shop/web-env-1a2b3c (dependency env): Failed — Provisioner template://score-dev/environment: secret score-environment referenced by an output: secrets "score-environment" not found.`},
	}, {
		name: "ClaimFailed: the Job that failed, its last condition and its pod",
		setup: func(t *testing.T) (Input, world) {
			w := workloadIn(map[string]scorev1b1.Resource{"image": {Type: "image"}}, "InputsValid=True/Succeeded", "ClaimsReady=False/ClaimFailed", "RuntimeReady=False/ClaimPending", "Ready=False/ClaimFailed")
			c := claimOf(w, "image", "image", scorev1b1.ClaimPhaseFailed, "Provisioner runnable://score-dev/image: run build-web failed.", entry("batch/v1", "Job", "build-web", "Failed", "Job Failed. failed: 2/1"))
			job := object(t, "batch/v1", "Job", &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "build-web", UID: "job-uid"},
				Spec: batchv1.JobSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "build-web"}}},
				Status: batchv1.JobStatus{Failed: 2, Conditions: []batchv1.JobCondition{
					{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastTransitionTime: metav1.Unix(10, 0)},
					{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastTransitionTime: metav1.Unix(11, 0)}}}})
			return Input{Workload: w, Config: cfg, Claims: []scorev1b1.ResourceClaim{c}}, world{objects: []*unstructured.Unstructured{job, pod(t, "build-web", "build-web-a", "failed")}}
		},
		want: []string{
			"  ResourceClaim shop/web-image-1a2b3c (dependency image): Failed — Provisioner runnable://score-dev/image: run build-web failed.",
			"    Job shop/build-web: Failed (BackoffLimitExceeded): Job has reached the specified backoff limit; 0 active, 2 failed, 0 succeeded",
			"      Pod shop/build-web-a: Failed — container build terminated (Error, exit code 1): failed to solve: repository not found",
		},
	}, {
		name: "ClaimPending: the StatefulSet 0 of 1, its pod not scheduled, its volume claim and the volume controller's event",
		setup: func(t *testing.T) (Input, world) {
			w := workloadIn(db, "InputsValid=True/Succeeded", "ClaimsReady=False/ClaimPending", "RuntimeReady=False/ClaimPending", "Ready=False/ClaimPending")
			c := claimOf(w, "db", "postgres", scorev1b1.ClaimPhaseBinding, "Waiting for StatefulSet pg-1.",
				entry("v1", "Secret", "pg-1", "Current", ""), entry("apps/v1", "StatefulSet", "pg-1", "InProgress", "Ready: 0/1"))
			pvc := object(t, "v1", "PersistentVolumeClaim", &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data-pg-1-0", UID: "pvc-uid"}, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}})
			older := object(t, "v1", "Event", &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "e1"}, InvolvedObject: corev1.ObjectReference{UID: "pvc-uid"}, Type: "Normal", Reason: "WaitForFirstConsumer", LastTimestamp: metav1.Unix(20, 0)})
			warning := object(t, "v1", "Event", &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "e2"}, InvolvedObject: corev1.ObjectReference{UID: "pvc-uid"}, Type: "Warning", Reason: "FailedBinding",
				Message: "no persistent volumes available for this claim and no storage class is set", LastTimestamp: metav1.Unix(10, 0)})
			return Input{Workload: w, Config: cfg, Claims: []scorev1b1.ResourceClaim{c}},
				world{objects: []*unstructured.Unstructured{statefulSet(t, "pg-1", 0), pod(t, "pg-1", "pg-1-0", "unschedulable", "data-pg-1-0"), pvc, older, warning}}
		},
		want: []string{
			"  ResourceClaim shop/web-db-1a2b3c (dependency db): Binding — Waiting for StatefulSet pg-1.",
			"    StatefulSet shop/pg-1: 0 of 1 replicas ready",
			"      Pod shop/pg-1-0: Pending — not scheduled (Unschedulable): 0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available.",
			"        PersistentVolumeClaim shop/data-pg-1-0: Pending — FailedBinding: no persistent volumes available for this claim and no storage class is set",
		},
		absent: []string{"Secret shop/pg-1"},
	}, {
		name: "ClaimPending: a dependency that waits for another's outputs has no claim yet",
		setup: func(t *testing.T) (Input, world) {
			w := workloadIn(map[string]scorev1b1.Resource{"db": {Type: "postgres"}, "cache": {Type: "postgres"}}, "InputsValid=True/Succeeded", "ClaimsReady=False/ClaimPending", "RuntimeReady=False/ClaimPending", "Ready=False/ClaimPending")
			w.Status.Claims = []scorev1b1.ClaimSummary{{Key: "cache", Phase: scorev1b1.ClaimPhasePending, Reason: scorev1b1.ReasonClaimPending, Message: `Waiting for the outputs of "db".`}, {Key: "db", Phase: scorev1b1.ClaimPhaseBinding}}
			c := claimOf(w, "db", "postgres", scorev1b1.ClaimPhaseBinding, "Provisioning.")
			return Input{Workload: w, Config: cfg, Claims: []scorev1b1.ResourceClaim{c}}, world{}
		},
		want: []string{
			`  dependency cache: no claim exists for it yet: Waiting for the outputs of "db".`,
			"  ResourceClaim shop/web-db-1a2b3c (dependency db): Binding — Provisioning.",
		},
	}, {
		name: "ProjectionError: the output not published and what the claim publishes",
		setup: func(t *testing.T) (Input, world) {
			w := workloadIn(db, "InputsValid=True/Succeeded", "ClaimsReady=True/Succeeded", "RuntimeReady=False/ProjectionError", "Ready=False/ProjectionError")
			w.Spec.Containers["main"] = scorev1b1.Container{Image: "nginx", Variables: map[string]string{"DB": "${resources.db.hostname}"}}
			c := claimOf(w, "db", "postgres", scorev1b1.ClaimPhaseBound, "Provisioned.")
			c.Status.OutputsAvailable, c.Status.Outputs = true, &apiextensionsv1.JSON{Raw: []byte(`{"host":"pg","port":5432}`)}
			c.Status.SecretRef = &scorev1b1.OutputsSecretRef{Name: "web-db-1a2b3c-outputs", Keys: []string{"password"}}
			return Input{Workload: w, Config: cfg, Claims: []scorev1b1.ResourceClaim{c}}, world{}
		},
		want: []string{"  output resources.db.hostname: ResourceClaim shop/web-db-1a2b3c (provisioner template://score-dev/postgres) has not published hostname; it publishes host, password, port"},
	}, {
		name: "RuntimeProvisioning: the Deployment, its pod's waiting reason and a Secret the render needs that does not exist",
		setup: func(t *testing.T) (Input, world) {
			w := workloadIn(db, "InputsValid=True/Succeeded", "ClaimsReady=True/Succeeded", "RuntimeReady=Unknown/RuntimeProvisioning", "Ready=False/RuntimeProvisioning")
			p := planOf(w, scorev1b1.PlanPhasePlanning, "", entry("v1", "Service", "web", "Current", ""), entry("apps/v1", "Deployment", "web", "InProgress", "Deployment not Available"))
			p.Spec.Claims = []scorev1b1.PlanClaim{{Key: "db", ClaimName: "web-db-1a2b3c", SecretName: "web-db-1a2b3c-outputs"}}
			return Input{Workload: w, Config: cfg, Plan: p}, world{objects: []*unstructured.Unstructured{deployment(t, "web", 0, 1), pod(t, "web", "web-5d4c-x", "pull")}}
		},
		want: []string{
			"  Secret shop/web-db-1a2b3c-outputs (the secret outputs of dependency db): does not exist; the runtime waits for it",
			"  Deployment shop/web: 0 of 1 replicas ready, 1 updated, 0 available",
			`    Pod shop/web-5d4c-x: Pending — container main waiting (ImagePullBackOff): Back-off pulling image "nginx:nope"`,
		},
		absent: []string{"Service shop/web"},
	}, {
		name: "RuntimeProvisioning: an outputs Secret that exists is not named, and what it holds is never read",
		setup: func(t *testing.T) (Input, world) {
			w := workloadIn(db, "InputsValid=True/Succeeded", "ClaimsReady=True/Succeeded", "RuntimeReady=Unknown/RuntimeProvisioning", "Ready=False/RuntimeProvisioning")
			p := planOf(w, scorev1b1.PlanPhasePlanning, "", entry("apps/v1", "Deployment", "web", "InProgress", "Deployment not Available"))
			p.Spec.Claims = []scorev1b1.PlanClaim{{Key: "db", ClaimName: "web-db-1a2b3c", SecretName: "web-db-1a2b3c-outputs"}}
			return Input{Workload: w, Config: cfg, Plan: p}, world{objects: []*unstructured.Unstructured{secret(t, "web-db-1a2b3c-outputs"), deployment(t, "web", 0, 1), pod(t, "web", "web-5d4c-x", "unschedulable")}}
		},
		want:   []string{"  Deployment shop/web: 0 of 1 replicas ready", "    Pod shop/web-5d4c-x: Pending — not scheduled (Unschedulable)"},
		absent: []string{"Secret", "hunter2"},
	}, {
		name: "RuntimeDegraded: Ready, and the rollout's new pod is not scheduled",
		setup: func(t *testing.T) (Input, world) {
			w := workloadIn(nil, "InputsValid=True/Succeeded", "ClaimsReady=True/Succeeded", "RuntimeReady=True/RuntimeDegraded", "Ready=True/RuntimeDegraded")
			p := planOf(w, scorev1b1.PlanPhaseProjected, "", entry("apps/v1", "Deployment", "web", "InProgress", "Updated: 0/1"))
			return Input{Workload: w, Config: cfg, Plan: p}, world{objects: []*unstructured.Unstructured{deployment(t, "web", 1, 1), pod(t, "web", "web-old", "ready"), pod(t, "web", "web-new", "unschedulable")}}
		},
		want: []string{
			"  Deployment shop/web: 1 of 1 replicas ready, 1 updated, 1 available, 2 in all: a rollout is under way",
			"    Pod shop/web-new: Pending — not scheduled (Unschedulable)",
		},
		absent: []string{"web-old"},
	}, {
		name: "NetworkUnavailable: the route no Gateway accepted, and its Gateway that does not exist",
		setup: func(t *testing.T) (Input, world) {
			w := workloadIn(map[string]scorev1b1.Resource{"route": {Type: "route"}}, "InputsValid=True/Succeeded", "ClaimsReady=True/Succeeded", "RuntimeReady=False/NetworkUnavailable", "Ready=False/NetworkUnavailable")
			c := claimOf(w, "route", "route", scorev1b1.ClaimPhaseBound, "Provisioned.", entry("gateway.networking.k8s.io/v1", "HTTPRoute", "route-1", "Current", ""))
			p := planOf(w, scorev1b1.PlanPhaseProjected, "", entry("apps/v1", "Deployment", "web", "Current", ""), entry("v1", "Service", "web", "Current", ""))
			route := yamlObject(t, map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": map[string]any{"namespace": ns, "name": "route-1"},
				"spec": map[string]any{"parentRefs": []any{map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "score-dev", "namespace": "score-system"}}}})
			svc := object(t, "v1", "Service", &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP}})
			return Input{Workload: w, Config: cfg, Plan: p, Claims: []scorev1b1.ResourceClaim{c}}, world{objects: []*unstructured.Unstructured{route, svc}}
		},
		want: []string{
			"  HTTPRoute shop/route-1: no parent has accepted it: no gateway controller has reported on it",
			"    Gateway score-system/score-dev: does not exist",
		},
		absent: []string{"Service shop/web", "Deployment"},
	}, {
		name: "NetworkUnavailable: a Gateway no controller programmed, of a class nobody installed",
		setup: func(t *testing.T) (Input, world) {
			w := workloadIn(map[string]scorev1b1.Resource{"route": {Type: "route"}}, "InputsValid=True/Succeeded", "ClaimsReady=True/Succeeded", "RuntimeReady=False/NetworkUnavailable", "Ready=False/NetworkUnavailable")
			c := claimOf(w, "route", "route", scorev1b1.ClaimPhaseBound, "Provisioned.", entry("gateway.networking.k8s.io/v1", "HTTPRoute", "route-1", "Current", ""))
			route := yamlObject(t, map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": map[string]any{"namespace": ns, "name": "route-1"},
				"spec": map[string]any{"parentRefs": []any{map[string]any{"name": "edge"}}},
				"status": map[string]any{"parents": []any{map[string]any{"parentRef": map[string]any{"name": "edge"}, "controllerName": "example.com/gw",
					"conditions": []any{map[string]any{"type": "Accepted", "status": "False", "reason": "NoMatchingListenerHostname", "message": "no listener matches the route's hostnames"}}}}}})
			gw := yamlObject(t, map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "metadata": map[string]any{"namespace": ns, "name": "edge"},
				"spec":   map[string]any{"gatewayClassName": "example"},
				"status": map[string]any{"conditions": []any{map[string]any{"type": "Accepted", "status": "Unknown", "reason": "Pending", "message": "Waiting for controller"}}}})
			return Input{Workload: w, Config: cfg, Plan: planOf(w, scorev1b1.PlanPhaseProjected, ""), Claims: []scorev1b1.ResourceClaim{c}}, world{objects: []*unstructured.Unstructured{route, gw}}
		},
		want: []string{
			"  HTTPRoute shop/route-1: no parent has accepted it: parent shop/edge: Accepted=False (NoMatchingListenerHostname): no listener matches the route's hostnames",
			"    Gateway shop/edge: Accepted=Unknown (Pending): Waiting for controller",
			"      GatewayClass example: does not exist: no gateway controller is installed for it",
		},
	}, {
		name: "NetworkUnavailable: an Ingress without an address",
		setup: func(t *testing.T) (Input, world) {
			w := workloadIn(nil, "InputsValid=True/Succeeded", "ClaimsReady=True/Succeeded", "RuntimeReady=False/NetworkUnavailable", "Ready=False/NetworkUnavailable")
			p := planOf(w, scorev1b1.PlanPhaseProjected, "", entry("networking.k8s.io/v1", "Ingress", "web", "Current", ""))
			ing := yamlObject(t, map[string]any{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": map[string]any{"namespace": ns, "name": "web"}, "spec": map[string]any{"ingressClassName": "score-dev"}})
			class := yamlObject(t, map[string]any{"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": map[string]any{"name": "score-dev"}, "spec": map[string]any{"controller": "example.com/ingress"}})
			return Input{Workload: w, Config: cfg, Plan: p}, world{objects: []*unstructured.Unstructured{ing, class}}
		},
		want: []string{
			"  Ingress shop/web: no address yet: no ingress controller of class score-dev has given it one",
			"    IngressClass score-dev: its controller example.com/ingress has not answered",
		},
	}, {
		name: "PolicyViolation: the plan and the API server's words",
		setup: func(t *testing.T) (Input, world) {
			w := workloadIn(nil, "InputsValid=True/Succeeded", "ClaimsReady=True/Succeeded", "RuntimeReady=False/PolicyViolation", "Ready=False/PolicyViolation")
			p := planOf(w, scorev1b1.PlanPhaseFailed, `The API server refused an object: applying Deployment web: deployments.apps "web" is forbidden: ValidatingAdmissionPolicy 'no-latest' with binding 'no-latest' denied request: images must be pinned`)
			return Input{Workload: w, Config: cfg, Plan: p}, world{}
		},
		want: []string{`  WorkloadPlan shop/web: Failed — The API server refused an object: applying Deployment web: deployments.apps "web" is forbidden: ValidatingAdmissionPolicy 'no-latest' with binding 'no-latest' denied request: images must be pinned`},
	}, {
		name: "QuotaExceeded: the plan and the quota at its limit",
		setup: func(t *testing.T) (Input, world) {
			w := workloadIn(nil, "InputsValid=True/Succeeded", "ClaimsReady=True/Succeeded", "RuntimeReady=False/QuotaExceeded", "Ready=False/QuotaExceeded")
			p := planOf(w, scorev1b1.PlanPhaseFailed, `The API server refused an object: applying Deployment web: deployments.apps "web" is forbidden: exceeded quota: apps`)
			q := object(t, "v1", "ResourceQuota", &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "apps"},
				Status: corev1.ResourceQuotaStatus{Hard: corev1.ResourceList{"count/deployments.apps": resource.MustParse("0"), "pods": resource.MustParse("10")},
					Used: corev1.ResourceList{"count/deployments.apps": resource.MustParse("0"), "pods": resource.MustParse("3")}}})
			return Input{Workload: w, Config: cfg, Plan: p}, world{objects: []*unstructured.Unstructured{q}}
		},
		want: []string{
			"  WorkloadPlan shop/web: Failed — The API server refused an object",
			"  ResourceQuota shop/apps: count/deployments.apps 0 of 0 used (at its limit), pods 3 of 10 used",
		},
	}, {
		name: "PermissionDenied: the object another owner holds",
		setup: func(t *testing.T) (Input, world) {
			w := workloadIn(nil, "InputsValid=True/Succeeded", "ClaimsReady=True/Succeeded", "RuntimeReady=False/PermissionDenied", "Ready=False/PermissionDenied")
			return Input{Workload: w, Config: cfg, Plan: planOf(w, scorev1b1.PlanPhaseFailed, "Service web exists and belongs to workload api")}, world{}
		},
		want: []string{"  WorkloadPlan shop/web: Failed — Service web exists and belongs to workload api"},
	}, {
		name: "Forbidden: what the reader's rights do not show is said, not guessed",
		setup: func(t *testing.T) (Input, world) {
			w := workloadIn(db, "InputsValid=True/Succeeded", "ClaimsReady=True/Succeeded", "RuntimeReady=Unknown/RuntimeProvisioning", "Ready=False/RuntimeProvisioning")
			p := planOf(w, scorev1b1.PlanPhasePlanning, "", entry("apps/v1", "Deployment", "web", "InProgress", "Deployment not Available"), entry("apps/v1", "StatefulSet", "cache", "InProgress", "Ready: 0/1"))
			p.Spec.Claims = []scorev1b1.PlanClaim{{Key: "db", SecretName: "web-db-1a2b3c-outputs"}}
			return Input{Workload: w, Config: cfg, Plan: p}, world{objects: []*unstructured.Unstructured{deployment(t, "web", 0, 1)}, denied: map[string]bool{"Pod": true, "Secret": true, "StatefulSet": true}}
		},
		want: []string{
			"  Secret shop/web-db-1a2b3c-outputs (the secret outputs of dependency db): not read: your rights do not let you ask whether it exists",
			"  Deployment shop/web: 0 of 1 replicas ready",
			"    its pods: not read: your rights do not let you list pods in shop",
			"  StatefulSet shop/cache: InProgress — Ready: 0/1 (not read: your rights do not let you read it)",
		},
	}, {
		name: "Ready: nothing in the way and nothing read",
		setup: func(t *testing.T) (Input, world) {
			w := workloadIn(nil, "InputsValid=True/Succeeded", "ClaimsReady=True/Succeeded", "RuntimeReady=True/Succeeded", "Ready=True/Succeeded")
			return Input{Workload: w, Config: cfg, Plan: planOf(w, scorev1b1.PlanPhaseProjected, "", entry("apps/v1", "Deployment", "web", "InProgress", ""))}, world{}
		},
		absent: []string{"In the way"},
	}}
}

func TestInTheWay(t *testing.T) {
	for _, tc := range wayCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			in, w := tc.setup(t)
			in, _ = w.observe(t, in)
			var out bytes.Buffer
			if err := Explain(&out, in); err != nil {
				t.Fatal(err)
			}
			text := out.String()
			_, way, found := strings.Cut(text, "In the way:\n")
			if len(tc.want) > 0 && !found {
				t.Fatalf("no In the way:\n%s", text)
			}
			lines := strings.Split(way, "\n")
			at := 0
			for _, want := range tc.want {
				for at < len(lines) && !strings.HasPrefix(lines[at], want) {
					at++
				}
				if at == len(lines) {
					t.Fatalf("want a line starting %q (in this order) in:\n%s", want, text)
				}
				at++
			}
			for _, a := range tc.absent {
				if strings.Contains(way, a) || a == "In the way" && found {
					t.Fatalf("%q must not appear in:\n%s", a, text)
				}
			}
		})
	}
}

// The reads follow the walk: the object first, then what it shows it waits for (pods, then a
// pod's volume claim, then the claim's events), each once, after the Workload's namespace
// (whether it is a preview); a Ready Workload reads its namespace only.
func TestNextReadsWhatTheWalkFollows(t *testing.T) {
	cfg := config(t)
	w := workloadIn(map[string]scorev1b1.Resource{"db": {Type: "postgres"}}, "InputsValid=True/Succeeded", "ClaimsReady=False/ClaimPending", "RuntimeReady=False/ClaimPending", "Ready=False/ClaimPending")
	c := claimOf(w, "db", "postgres", scorev1b1.ClaimPhaseBinding, "Waiting for StatefulSet pg-1.", entry("apps/v1", "StatefulSet", "pg-1", "InProgress", "Ready: 0/1"))
	pvc := object(t, "v1", "PersistentVolumeClaim", &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data", UID: "pvc-uid"}, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}})
	wd := world{objects: []*unstructured.Unstructured{statefulSet(t, "pg-1", 0), pod(t, "pg-1", "pg-1-0", "unschedulable", "data"), pvc}}
	_, made := wd.observe(t, Input{Workload: w, Config: cfg, Claims: []scorev1b1.ResourceClaim{c}})
	var got []string
	for _, r := range made {
		got = append(got, fmt.Sprintf("%s %s %s/%s %s %s", r.Ref.APIVersion, r.Ref.Kind, r.Ref.Namespace, r.Ref.Name, r.List.Labels, r.List.Fields))
	}
	want := []string{
		"v1 Namespace /shop  ",
		"apps/v1 StatefulSet shop/pg-1  ",
		"v1 Pod shop/ app=pg-1 ",
		"v1 PersistentVolumeClaim shop/data  ",
		"v1 Event shop/  involvedObject.uid=pvc-uid",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("reads:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	w.Status.Conditions = nil
	if reads := Next(Input{Workload: workloadIn(nil, "Ready=True/Succeeded"), Config: cfg, Claims: []scorev1b1.ResourceClaim{c}}); len(reads) != 1 || reads[0].Ref.Kind != "Namespace" {
		t.Fatalf("a Ready Workload reads %+v", reads)
	}
}

// However many objects are not healthy, a trace reads a bounded number of them and names the
// rest.
func TestInTheWayIsBounded(t *testing.T) {
	cfg := config(t)
	w := workloadIn(nil, "InputsValid=True/Succeeded", "ClaimsReady=True/Succeeded", "RuntimeReady=Unknown/RuntimeProvisioning", "Ready=False/RuntimeProvisioning")
	p := planOf(w, scorev1b1.PlanPhasePlanning, "")
	var wd world
	for i := range 50 {
		name := fmt.Sprintf("web-%02d", i)
		p.Status.Objects = append(p.Status.Objects, entry("apps/v1", "Deployment", name, "InProgress", ""))
		wd.objects = append(wd.objects, deployment(t, name, 0, 1), pod(t, name, name+"-a", "unschedulable"))
	}
	in, made := wd.observe(t, Input{Workload: w, Config: cfg, Plan: p})
	if len(made) != 1+2*maxEntries {
		t.Fatalf("%d reads, want %d (the namespace, each Deployment and its pods)", len(made), 1+2*maxEntries)
	}
	var out bytes.Buffer
	if err := Explain(&out, in); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), fmt.Sprintf("  %d more not healthy: Deployment shop/web-%02d,", 50-maxEntries, maxEntries)) {
		t.Fatalf("the rest are named:\n%s", out.String())
	}
}

// A Secret is only asked whether it exists: every read of one is of its metadata.
func TestSecretsAreReadAsMetadataOnly(t *testing.T) {
	w := workloadIn(map[string]scorev1b1.Resource{"db": {Type: "postgres"}, "cache": {Type: "postgres"}}, "InputsValid=True/Succeeded", "ClaimsReady=True/Succeeded", "RuntimeReady=Unknown/RuntimeProvisioning", "Ready=False/RuntimeProvisioning")
	p := planOf(w, scorev1b1.PlanPhasePlanning, "", entry("v1", "Secret", "web-files", "InProgress", ""))
	p.Spec.Claims = []scorev1b1.PlanClaim{{Key: "db", SecretName: "db-outputs"}, {Key: "cache", SecretName: "cache-outputs"}}
	wd := world{objects: []*unstructured.Unstructured{secret(t, "db-outputs"), secret(t, "web-files")}}
	_, made := wd.observe(t, Input{Workload: w, Config: config(t), Plan: p})
	secrets := 0
	for _, r := range made {
		if r.Ref.Kind == "Secret" {
			secrets++
			if !r.MetadataOnly {
				t.Errorf("a Secret is read whole: %+v", r)
			}
		}
	}
	if secrets != 3 {
		t.Fatalf("%d reads of Secrets, want the two outputs Secrets and the Secret the plan applied: %+v", secrets, made)
	}
}

// The endpoint's objects are read by what the exposure says is pending: an ingress or a gateway
// (routes, Ingresses), a load balancer (Services).
func TestNetworkUnavailableReadsWhatTheExposureSaysIsPending(t *testing.T) {
	w := workloadIn(nil, "InputsValid=True/Succeeded", "ClaimsReady=True/Succeeded", "RuntimeReady=False/NetworkUnavailable", "Ready=False/NetworkUnavailable")
	p := planOf(w, scorev1b1.PlanPhaseProjected, "", entry("v1", "Service", "web", "Current", ""), entry("networking.k8s.io/v1", "Ingress", "web", "Current", ""), entry("apps/v1", "Deployment", "web", "Current", ""))
	for _, tc := range []struct {
		pending string
		want    string
	}{{scorev1b1.ExposureConditionIngressPending, "Ingress"}, {scorev1b1.ExposureConditionLBPending, "Service"}} {
		e := &scorev1b1.WorkloadExposure{Status: scorev1b1.WorkloadExposureStatus{Conditions: []metav1.Condition{{Type: tc.pending, Status: metav1.ConditionTrue}}}}
		reads := Next(Input{Workload: w, Config: config(t), Plan: p, Exposure: e})[1:] // after the namespace
		if len(reads) != 1 || reads[0].Ref.Kind != tc.want {
			t.Errorf("%s: reads %+v, want the %s only", tc.pending, reads, tc.want)
		}
	}
}
