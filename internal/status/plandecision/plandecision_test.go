package plandecision

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/exposure"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/prepare"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/termtest"
)

// Test objects.

var configMaps = schema.GroupResource{Resource: "configmaps"}

// plan is plan web at generation 2, with opts applied.
func plan(opts ...func(*scorev1b1.WorkloadPlan)) *scorev1b1.WorkloadPlan {
	p := &scorev1b1.WorkloadPlan{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web", Generation: 2},
		Spec: scorev1b1.WorkloadPlanSpec{WorkloadRef: scorev1b1.LocalWorkloadRef{Name: "web", UID: "u1"}, ObservedWorkloadGeneration: 5,
			RuntimeClass: scorev1b1.RuntimeClassKubernetes, Template: scorev1b1.TemplateRef{Ref: "configmap://platform/templates/web.yaml"}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// projectedAt is a plan Projected for generation: its Deployment applied and healthy.
func projectedAt(generation int64) func(*scorev1b1.WorkloadPlan) {
	return func(p *scorev1b1.WorkloadPlan) {
		p.Status = scorev1b1.WorkloadPlanStatus{Phase: scorev1b1.PlanPhaseProjected, ObservedGeneration: generation, Objects: []scorev1b1.AppliedObject{obj("", "Deployment", "web", scorev1b1.HealthCurrent)}}
		setCondition(p, scorev1b1.PlanConditionApplied, metav1.ConditionTrue, scorev1b1.PlanReasonApplied, "1 objects applied.")
		setCondition(p, scorev1b1.PlanConditionHealthy, metav1.ConditionTrue, scorev1b1.PlanReasonCurrent, "Every object is healthy.")
	}
}

// updatingAt is a plan rolling generation out behind an earlier one's healthy objects.
func updatingAt(generation int64) func(*scorev1b1.WorkloadPlan) {
	return func(p *scorev1b1.WorkloadPlan) {
		p.Status = scorev1b1.WorkloadPlanStatus{Phase: scorev1b1.PlanPhasePlanning, ObservedGeneration: generation, Objects: []scorev1b1.AppliedObject{obj("", "Deployment", "web", scorev1b1.HealthInProgress)}}
		setCondition(p, scorev1b1.PlanConditionApplied, metav1.ConditionTrue, scorev1b1.PlanReasonApplied, "1 objects applied.")
		setCondition(p, scorev1b1.PlanConditionHealthy, metav1.ConditionFalse, scorev1b1.PlanReasonUpdating, "Rolling out behind the previous version; waiting for Deployment web.")
	}
}

func phase(ph scorev1b1.PlanPhase) func(*scorev1b1.WorkloadPlan) {
	return func(p *scorev1b1.WorkloadPlan) { p.Status.Phase = ph }
}

func message(m string) func(*scorev1b1.WorkloadPlan) {
	return func(p *scorev1b1.WorkloadPlan) { p.Status.Message = m }
}

func onCluster(c string) func(*scorev1b1.WorkloadPlan) {
	return func(p *scorev1b1.WorkloadPlan) { p.Spec.Cluster = c }
}

func objects(objs ...scorev1b1.AppliedObject) func(*scorev1b1.WorkloadPlan) {
	return func(p *scorev1b1.WorkloadPlan) { p.Status.Objects = objs }
}

func obj(cluster, kind, name, health string) scorev1b1.AppliedObject {
	return scorev1b1.AppliedObject{Cluster: cluster, APIVersion: "v1", Kind: kind, Namespace: "team", Name: name, Health: health}
}

// deployment is a live Deployment with available replicas.
func deployment(available int64) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web", "namespace": "team"}}}
	_ = unstructured.SetNestedField(u.Object, available, "status", "availableReplicas")
	return u
}

// job is a live Job.
func job(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "batch/v1", "kind": "Job", "metadata": map[string]any{"name": name, "namespace": "team"}}}
}

// API errors, as the API server answers them.

func forbidden(message string) error {
	return apierrors.NewForbidden(configMaps, "web", errors.New(message))
}

func terminating() error {
	err := apierrors.NewForbidden(configMaps, "web", errors.New("unable to create new content in namespace team because it is being terminated"))
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
	return fmt.Errorf("applying ConfigMap web: %w", err)
}

var (
	conflict      = fmt.Errorf("applying ConfigMap web: %w", apierrors.NewConflict(configMaps, "web", errors.New("the object has been modified")))
	busy          = apierrors.NewTooManyRequests("busy", 1)
	webhookDown   = fmt.Errorf("applying ConfigMap web: %w", apierrors.NewInternalError(errors.New(`failed calling webhook "v.example.com": connection refused`)))
	refused       = fmt.Errorf("applying Deployment web: %w", &url.Error{Op: "Patch", URL: "https://eu:6443", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}})
	policy        = forbidden(`admission webhook "v.example.com" denied the request: no`)
	quota         = forbidden("exceeded quota: q, requested: pods=1")
	rbac          = forbidden(`User "system:serviceaccount:score:runtime" cannot create resource "namespaces"`)
	invalid       = apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "Bad_Name", field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), "Bad_Name", "a lowercase RFC 1123 subdomain")})
	tooLarge      = apierrors.NewRequestEntityTooLargeError("limit is 3145728")
	notAllowed    = fmt.Errorf("ClusterRoleBinding admin is of a kind the platform does not allow (allowedKinds): %w", prepare.ErrNotAllowed)
	notPlaceable  = errors.New("the namespace team on cluster eu: it exists there without the label")
	notAnswering  = errors.New("cluster eu does not answer: dial tcp: connection refused")
	otherWorkload = &Owned{GroupKind: schema.GroupKind{Kind: "Service"}, Namespace: "team", Name: "db", OwnerValue: "u9", OwnerName: "db",
		Message: "Service db exists and belongs to workload db"}
	noWorkload = &Owned{GroupKind: schema.GroupKind{Kind: "Service"}, Namespace: "team", Name: "db", Message: "Service db exists and is not the runtime's"}
)

// want is what a case expects of a Decision; a zero field is not checked, except those that
// say so.
type want struct {
	// kept: the status is the one read (Pending when it had no phase).
	kept                           bool
	phase                          scorev1b1.PlanPhase
	reason                         scorev1b1.Reason
	message                        string // contained in the status message
	applied, healthy               string // the conditions' reasons
	observedGeneration             int64
	objects                        []string // the inventory: cluster:Kind/name
	retry                          bool     // checked always: the pass ends with an error
	events                         []string // checked always: the events' reasons
	blocked, unblocked             bool     // checked always
	exposure                       string   // the exposure's health condition that is True; "" no exposure write
	retryWraps                     error
	appliedMessage, healthyMessage string
}

func TestFrom(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Observed
		want want
	}{
		// Before anything is read.
		{"a member cluster not probed yet: nothing is said, nothing retried",
			Observed{Plan: plan(onCluster("eu")), MemberPending: true}, want{}},

		// The template.
		{"a template that does not match its digest fails the plan, with a warning",
			Observed{Plan: plan(), Stopped: Template, Err: errors.New("the template does not match its digest"), DigestMismatch: true},
			want{phase: scorev1b1.PlanPhaseFailed, reason: scorev1b1.ReasonRuntimeProvisioning, message: "The template configmap://platform/templates/web.yaml cannot be used: the template does not match its digest",
				applied: string(scorev1b1.ReasonRuntimeProvisioning), observedGeneration: 2, retry: true, events: []string{"TemplateDigestMismatch"}}},
		{"the same mismatch on the next try is not warned of again",
			Observed{Plan: plan(phase(scorev1b1.PlanPhaseFailed), message("The template configmap://platform/templates/web.yaml cannot be used: the template does not match its digest")),
				Stopped: Template, Err: errors.New("the template does not match its digest"), DigestMismatch: true},
			want{phase: scorev1b1.PlanPhaseFailed, retry: true}},
		{"a template that no longer matches the digest of a plan Projected: what runs stays, Projected, said once",
			Observed{Plan: plan(projectedAt(2)), Stopped: Template, Err: errors.New("the template does not match its digest"), DigestMismatch: true},
			want{phase: scorev1b1.PlanPhaseProjected, healthy: scorev1b1.PlanReasonCurrent, observedGeneration: 2, retry: true, events: []string{"TemplateDigestMismatch"},
				message: "The template configmap://platform/templates/web.yaml cannot be used: the template does not match its digest. What was applied before stays as it is."}},
		{"the same for a new generation of a plan that was Projected: it stays as it was, for the generation it reported on",
			Observed{Plan: plan(projectedAt(1)), Stopped: Template, Err: errors.New("the template does not match its digest"), DigestMismatch: true},
			want{phase: scorev1b1.PlanPhaseProjected, healthy: scorev1b1.PlanReasonCurrent, observedGeneration: 1, retry: true, events: []string{"TemplateDigestMismatch"},
				message: "The template configmap://platform/templates/web.yaml cannot be used: the template does not match its digest. What was applied before stays as it is."}},
		{"the same on the next try is not warned of again",
			Observed{Plan: plan(projectedAt(2), message("The template configmap://platform/templates/web.yaml cannot be used: the template does not match its digest. What was applied before stays as it is.")),
				Stopped: Template, Err: errors.New("the template does not match its digest"), DigestMismatch: true},
			want{kept: true, retry: true}},
		{"a template ConfigMap read the API server asks to retry keeps the plan",
			Observed{Plan: plan(projectedAt(1)), Stopped: Template, Err: fmt.Errorf("reading template ConfigMap: %w", busy)},
			want{kept: true, retry: true, retryWraps: busy}},
		{"a template registry that does not answer is reported",
			Observed{Plan: plan(), Stopped: Template, Err: &url.Error{Op: "Get", URL: "https://registry.invalid/v2/", Err: &net.DNSError{Err: "no such host", Name: "registry.invalid"}}},
			want{phase: scorev1b1.PlanPhaseFailed, reason: scorev1b1.ReasonRuntimeProvisioning, message: "no such host", retry: true}},

		// The inputs and the render.
		{"an outputs Secret that does not exist keeps the plan and waits for its watch, quietly",
			Observed{Plan: plan(projectedAt(1)), Stopped: Outputs, Err: fmt.Errorf("reading the outputs of db: %w", apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, "web-db"))},
			want{kept: true}},
		{"an outputs Secret not readable keeps the plan and retries",
			Observed{Plan: plan(projectedAt(1)), Stopped: Outputs, Err: fmt.Errorf("reading the outputs of db: %w", busy)},
			want{kept: true, retry: true, retryWraps: busy}},
		{"a template that does not render fails the plan; its change brings it back",
			Observed{Plan: plan(), Stopped: Render, Err: errors.New("the template does not parse")},
			want{phase: scorev1b1.PlanPhaseFailed, reason: scorev1b1.ReasonRuntimeProvisioning, message: "Rendering failed: the template does not parse", observedGeneration: 2}},
		{"a secret value the API server did not answer for keeps the plan",
			Observed{Plan: plan(projectedAt(1)), Stopped: Render, Err: fmt.Errorf("template: executing: error calling secret: %w", apierrors.NewInternalError(errors.New("etcd")))},
			want{kept: true, retry: true}},

		// The member cluster.
		{"a member cluster that does not answer: unreachable, its next answer brings the plan back",
			Observed{Plan: plan(onCluster("eu")), Stopped: Target, Err: notAnswering},
			want{phase: scorev1b1.PlanPhaseFailed, reason: scorev1b1.ReasonNetworkUnavailable, message: "The plan cannot be applied: cluster eu does not answer: dial tcp: connection refused. Nothing was changed or deleted.",
				applied: scorev1b1.PlanReasonClusterUnreachable}},
		{"a member that refuses the namespace: refused, retried (its label is not watched)",
			Observed{Plan: plan(onCluster("eu")), Cluster: "eu", Stopped: Place, Err: notPlaceable, NotPlaceable: true},
			want{phase: scorev1b1.PlanPhaseFailed, reason: scorev1b1.ReasonPermissionDenied, message: "without the label", retry: true}},
		{"placing the namespace denied by the member's API server",
			Observed{Plan: plan(onCluster("eu")), Cluster: "eu", Stopped: Place, Err: rbac},
			want{phase: scorev1b1.PlanPhaseFailed, reason: scorev1b1.ReasonPermissionDenied, message: "The API server refused placing on cluster eu: ", retry: true}},
		{"placing on a member that stops answering: unreachable",
			Observed{Plan: plan(onCluster("eu")), Cluster: "eu", Stopped: Place, Err: refused},
			want{phase: scorev1b1.PlanPhaseFailed, reason: scorev1b1.ReasonNetworkUnavailable, applied: scorev1b1.PlanReasonClusterUnreachable, message: "cluster eu does not answer"}},
		{"placing on a member the API server asks to retry keeps the plan",
			Observed{Plan: plan(onCluster("eu"), projectedAt(1)), Cluster: "eu", Stopped: Place, Err: busy},
			want{kept: true, retry: true, retryWraps: busy}},

		// The apply: refusals of our own making.
		{"a kind the platform does not allow: refused until the template or the config changes",
			Observed{Plan: plan(), Stopped: Apply, Err: notAllowed},
			want{phase: scorev1b1.PlanPhaseFailed, reason: scorev1b1.ReasonPermissionDenied, message: "does not allow (allowedKinds)", applied: string(scorev1b1.ReasonPermissionDenied)}},
		{"an object another workload owns: refused, blocked by it, said on both workloads",
			Observed{Plan: plan(), Stopped: Apply, Err: errors.New(otherWorkload.Message), Owned: otherWorkload},
			want{phase: scorev1b1.PlanPhaseFailed, reason: scorev1b1.ReasonPermissionDenied, message: otherWorkload.Message, applied: scorev1b1.PlanReasonObjectConflict,
				blocked: true, events: []string{scorev1b1.PlanReasonObjectConflict, scorev1b1.PlanReasonObjectConflict}}},
		{"the same refusal on the next pass: blocked, said once",
			Observed{Plan: plan(phase(scorev1b1.PlanPhaseFailed), message(otherWorkload.Message)), Stopped: Apply, Err: errors.New(otherWorkload.Message), Owned: otherWorkload},
			want{phase: scorev1b1.PlanPhaseFailed, blocked: true}},
		{"an object the runtime did not create: a plain permission denial",
			Observed{Plan: plan(), Stopped: Apply, Err: errors.New(noWorkload.Message), Owned: noWorkload},
			want{phase: scorev1b1.PlanPhaseFailed, reason: scorev1b1.ReasonPermissionDenied, applied: string(scorev1b1.ReasonPermissionDenied), blocked: true, events: []string{scorev1b1.PlanReasonObjectConflict}}},

		// The apply: the API server's answers, by the one classification.
		{"denied by an admission policy: reported with its reason, retried",
			Observed{Plan: plan(projectedAt(1)), Stopped: Apply, Err: policy},
			want{phase: scorev1b1.PlanPhaseFailed, reason: scorev1b1.ReasonPolicyViolation, message: "The API server refused an object: ", applied: string(scorev1b1.ReasonPolicyViolation), observedGeneration: 2, retry: true}},
		{"over a quota",
			Observed{Plan: plan(), Stopped: Apply, Err: quota},
			want{phase: scorev1b1.PlanPhaseFailed, reason: scorev1b1.ReasonQuotaExceeded, retry: true}},
		{"the namespace is being deleted: nothing to report or retry",
			Observed{Plan: plan(projectedAt(1)), Stopped: Apply, Err: terminating()},
			want{kept: true}},
		{"a conflict keeps a Projected plan Projected",
			Observed{Plan: plan(projectedAt(1)), Stopped: Apply, Err: conflict},
			want{kept: true, retry: true, retryWraps: conflict}},
		{"a webhook failing closed (500) keeps a Projected plan Projected",
			Observed{Plan: plan(projectedAt(1)), Stopped: Apply, Err: webhookDown},
			want{kept: true, retry: true, retryWraps: webhookDown}},
		{"the API server busy keeps a new plan Pending",
			Observed{Plan: plan(), Stopped: Apply, Err: busy},
			want{kept: true, phase: scorev1b1.PlanPhasePending, retry: true}},
		{"the hub's API server not answering keeps the plan",
			Observed{Plan: plan(projectedAt(1)), Stopped: Apply, Err: apierrors.NewServiceUnavailable("restarting")},
			want{kept: true, retry: true}},
		{"an object too large: refused until what it is rendered from changes",
			Observed{Plan: plan(), Stopped: Apply, Err: tooLarge},
			want{phase: scorev1b1.PlanPhaseFailed, reason: scorev1b1.ReasonRuntimeProvisioning, message: "Applying failed: "}},
		{"an invalid object: reported, retried",
			Observed{Plan: plan(), Stopped: Apply, Err: invalid},
			want{phase: scorev1b1.PlanPhaseFailed, reason: scorev1b1.ReasonRuntimeProvisioning, message: `Applying failed: ConfigMap "Bad_Name" is invalid`, retry: true, retryWraps: invalid}},

		// The apply on a member cluster.
		{"a member that stops answering mid-apply: unreachable, and what reached it is listed",
			Observed{Plan: plan(onCluster("eu"), projectedAt(1)), Cluster: "eu", Stopped: Apply, Err: refused, Applied: []scorev1b1.AppliedObject{obj("eu", "Secret", "web-db", scorev1b1.HealthCurrent)}},
			want{phase: scorev1b1.PlanPhaseFailed, reason: scorev1b1.ReasonNetworkUnavailable, applied: scorev1b1.PlanReasonClusterUnreachable,
				objects: []string{"eu:Secret/web-db", ":Deployment/web"}}},
		{"a conflict on a member keeps the plan Projected, and lists what reached the member",
			Observed{Plan: plan(onCluster("eu"), projectedAt(1)), Cluster: "eu", Stopped: Apply, Err: conflict, Applied: []scorev1b1.AppliedObject{obj("eu", "Secret", "web-db", scorev1b1.HealthCurrent)}},
			want{phase: scorev1b1.PlanPhaseProjected, observedGeneration: 1, retry: true, objects: []string{"eu:Secret/web-db", ":Deployment/web"}}},
		{"the namespace being deleted on a member: retried, the next pass places it again",
			Observed{Plan: plan(onCluster("eu"), projectedAt(1)), Cluster: "eu", Stopped: Apply, Err: terminating()},
			want{kept: true, retry: true}},
		{"an invalid object on a member: reported, retried",
			Observed{Plan: plan(onCluster("eu")), Cluster: "eu", Stopped: Apply, Err: invalid},
			want{phase: scorev1b1.PlanPhaseFailed, reason: scorev1b1.ReasonRuntimeProvisioning, message: "Applying on cluster eu failed: ", retry: true}},

		// After the apply.
		{"a finalizer that did not go through keeps the plan",
			Observed{Plan: plan(projectedAt(1)), Stopped: Hold, Err: conflict},
			want{kept: true, retry: true}},
		{"a prune that did not go through keeps the plan",
			Observed{Plan: plan(projectedAt(1)), Stopped: Settle, Err: rbac},
			want{kept: true, retry: true}},
		{"waiting for a definition to be established: applied so far, nothing pruned",
			Observed{Plan: plan(objects(obj("", "Gizmo", "old", scorev1b1.HealthCurrent))), Applied: []scorev1b1.AppliedObject{obj("", "CustomResourceDefinition", "gizmos", scorev1b1.HealthInProgress)},
				Waiting: []string{"CustomResourceDefinition gizmos"}},
			want{phase: scorev1b1.PlanPhasePlanning, message: "Waiting for CustomResourceDefinition gizmos to be established.", applied: scorev1b1.PlanReasonInProgress,
				objects: []string{":Gizmo/old", ":CustomResourceDefinition/gizmos"}, unblocked: true}},
		{"every object healthy: Projected",
			Observed{Plan: plan(), Applied: []scorev1b1.AppliedObject{obj("", "Deployment", "web", scorev1b1.HealthCurrent), obj("", "Service", "web", scorev1b1.HealthCurrent)},
				Exposure: &Exposure{}},
			want{phase: scorev1b1.PlanPhaseProjected, applied: scorev1b1.PlanReasonApplied, appliedMessage: "2 objects applied.", healthy: scorev1b1.PlanReasonCurrent, observedGeneration: 2,
				objects: []string{":Deployment/web", ":Service/web"}, unblocked: true, exposure: scorev1b1.ExposureConditionHealthy}},
		{"objects becoming healthy: Planning, and the exposure provisioning",
			Observed{Plan: plan(), Applied: []scorev1b1.AppliedObject{obj("", "Deployment", "web", scorev1b1.HealthInProgress)}, Live: []*unstructured.Unstructured{deployment(0)}, Exposure: &Exposure{}},
			want{phase: scorev1b1.PlanPhasePlanning, healthy: scorev1b1.PlanReasonInProgress, healthyMessage: "Waiting for Deployment web.", observedGeneration: 2, unblocked: true, exposure: scorev1b1.ExposureConditionProvisioning}},
		{"an object that failed: Planning, and the Workload is not Ready",
			Observed{Plan: plan(), Applied: []scorev1b1.AppliedObject{obj("", "Job", "migrate", scorev1b1.HealthFailed)}, Exposure: &Exposure{}},
			want{phase: scorev1b1.PlanPhasePlanning, healthy: scorev1b1.PlanReasonInProgress, healthyMessage: "Waiting for Job migrate.", unblocked: true, exposure: scorev1b1.ExposureConditionProvisioning}},
		{"healthy for this generation and still serving: degraded, still Projected",
			Observed{Plan: plan(projectedAt(2)), Applied: []scorev1b1.AppliedObject{obj("", "Deployment", "web", scorev1b1.HealthInProgress)}, Live: []*unstructured.Unstructured{deployment(1)}, Exposure: &Exposure{}},
			want{phase: scorev1b1.PlanPhaseProjected, healthy: scorev1b1.PlanReasonDegraded, healthyMessage: "Serving, but waiting for Deployment web.", unblocked: true, exposure: scorev1b1.ExposureConditionDegraded}},
		{"healthy for an earlier generation and still serving: a new one rolls out behind it, not degraded",
			Observed{Plan: plan(projectedAt(1)), Applied: []scorev1b1.AppliedObject{obj("", "Deployment", "web", scorev1b1.HealthInProgress)}, Live: []*unstructured.Unstructured{deployment(1)}, Exposure: &Exposure{}},
			want{phase: scorev1b1.PlanPhasePlanning, healthy: scorev1b1.PlanReasonUpdating, healthyMessage: "Rolling out behind the previous version; waiting for Deployment web.", observedGeneration: 2, unblocked: true,
				exposure: scorev1b1.ExposureConditionHealthy}},
		{"rolling out behind the previous version, still serving: still updating",
			Observed{Plan: plan(updatingAt(2)), Applied: []scorev1b1.AppliedObject{obj("", "Deployment", "web", scorev1b1.HealthInProgress)}, Live: []*unstructured.Unstructured{deployment(1)}},
			want{phase: scorev1b1.PlanPhasePlanning, healthy: scorev1b1.PlanReasonUpdating, observedGeneration: 2, unblocked: true}},
		{"healthy for an earlier generation, nothing serves any more: provisioning",
			Observed{Plan: plan(projectedAt(1)), Applied: []scorev1b1.AppliedObject{obj("", "Deployment", "web", scorev1b1.HealthInProgress)}, Live: []*unstructured.Unstructured{deployment(0)}},
			want{phase: scorev1b1.PlanPhasePlanning, healthy: scorev1b1.PlanReasonInProgress, observedGeneration: 2, unblocked: true}},
		{"rolling out behind the previous version, an object failed: provisioning, not updating",
			Observed{Plan: plan(updatingAt(2)), Applied: []scorev1b1.AppliedObject{obj("", "Deployment", "web", scorev1b1.HealthFailed)}, Live: []*unstructured.Unstructured{deployment(1)}},
			want{phase: scorev1b1.PlanPhasePlanning, healthy: scorev1b1.PlanReasonInProgress, observedGeneration: 2, unblocked: true}},
		{"a run to completion of a new generation behind the one an earlier generation completed: updating",
			Observed{Plan: plan(projectedAt(1)), Applied: []scorev1b1.AppliedObject{obj("", "Job", "migrate-b", scorev1b1.HealthInProgress)}, Live: []*unstructured.Unstructured{job("migrate-b")}},
			want{phase: scorev1b1.PlanPhasePlanning, healthy: scorev1b1.PlanReasonUpdating, healthyMessage: "Rolling out behind the previous version; waiting for Job migrate-b.", observedGeneration: 2, unblocked: true}},
		{"a run to completion of a new generation that failed: provisioning, not updating",
			Observed{Plan: plan(projectedAt(1)), Applied: []scorev1b1.AppliedObject{obj("", "Job", "migrate-b", scorev1b1.HealthFailed)}, Live: []*unstructured.Unstructured{job("migrate-b")}},
			want{phase: scorev1b1.PlanPhasePlanning, healthy: scorev1b1.PlanReasonInProgress, observedGeneration: 2, unblocked: true}},
		{"a first generation never served: provisioning, whatever its objects say",
			Observed{Plan: plan(), Applied: []scorev1b1.AppliedObject{obj("", "Deployment", "web", scorev1b1.HealthInProgress)}, Live: []*unstructured.Unstructured{deployment(1)}},
			want{phase: scorev1b1.PlanPhasePlanning, healthy: scorev1b1.PlanReasonInProgress, observedGeneration: 2, unblocked: true}},
		{"a Job's earlier runs kept by its history limit are listed after it",
			Observed{Plan: plan(), Applied: []scorev1b1.AppliedObject{obj("", "Job", "migrate-b", scorev1b1.HealthCurrent)}, Runs: []scorev1b1.AppliedObject{obj("", "Job", "migrate-a", scorev1b1.HealthCurrent)}},
			want{phase: scorev1b1.PlanPhaseProjected, appliedMessage: "2 objects applied.", objects: []string{":Job/migrate-b", ":Job/migrate-a"}, unblocked: true}},
		{"an exposure that could not be read: the plan's status written, retried",
			Observed{Plan: plan(), Applied: []scorev1b1.AppliedObject{obj("", "Deployment", "web", scorev1b1.HealthCurrent)}, ExposureErr: busy},
			want{phase: scorev1b1.PlanPhaseProjected, retry: true, retryWraps: busy, unblocked: true}},

		// A move between clusters.
		{"moved and healthy here: the earlier cluster's objects deleted, said with an event",
			Observed{Plan: plan(onCluster("us"), objects(obj("eu", "Deployment", "web", scorev1b1.HealthCurrent))), Cluster: "us",
				Applied: []scorev1b1.AppliedObject{obj("us", "Deployment", "web", scorev1b1.HealthCurrent)}, Left: &Left{Deleted: map[string]int{"eu": 1}}},
			want{phase: scorev1b1.PlanPhaseProjected, appliedMessage: "1 objects applied on cluster us.", objects: []string{"us:Deployment/web"}, unblocked: true, events: []string{"Moved"}}},
		{"moved, and the earlier cluster does not answer: its objects stay listed",
			Observed{Plan: plan(onCluster("us"), objects(obj("eu", "Deployment", "web", scorev1b1.HealthCurrent))), Cluster: "us",
				Applied: []scorev1b1.AppliedObject{obj("us", "Deployment", "web", scorev1b1.HealthCurrent)}, Left: &Left{Waiting: []scorev1b1.AppliedObject{obj("eu", "Deployment", "web", scorev1b1.HealthCurrent)}}},
			want{phase: scorev1b1.PlanPhaseProjected, objects: []string{"us:Deployment/web", "eu:Deployment/web"}, unblocked: true}},
		{"moved, not healthy here yet: the earlier cluster's objects stay",
			Observed{Plan: plan(onCluster("us"), objects(obj("eu", "Deployment", "web", scorev1b1.HealthCurrent))), Cluster: "us",
				Applied: []scorev1b1.AppliedObject{obj("us", "Deployment", "web", scorev1b1.HealthInProgress)}},
			want{phase: scorev1b1.PlanPhasePlanning, objects: []string{"us:Deployment/web", "eu:Deployment/web"}, unblocked: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in.Plan.DeepCopy()
			d := From(tc.in)
			check(t, tc.in, d, tc.want)
			if !equality.Semantic.DeepEqual(in, tc.in.Plan) {
				t.Fatal("From changed the plan it was given")
			}
		})
	}
}

func check(t *testing.T, in Observed, d Decision, w want) {
	t.Helper()
	st := d.Status
	if w.kept {
		read := in.Plan.Status.DeepCopy()
		if read.Phase == "" && !in.MemberPending {
			read.Phase = scorev1b1.PlanPhasePending
		}
		if !equality.Semantic.DeepEqual(*read, st) {
			t.Fatalf("the status was rewritten:\nread    %+v\ndecided %+v", *read, st)
		}
	}
	if w.phase != "" && st.Phase != w.phase {
		t.Fatalf("phase %s (%s: %s), want %s", st.Phase, st.Reason, st.Message, w.phase)
	}
	if w.reason != "" && st.Reason != w.reason {
		t.Fatalf("reason %s, want %s", st.Reason, w.reason)
	}
	if !strings.Contains(st.Message, w.message) {
		t.Fatalf("message %q, want it to contain %q", st.Message, w.message)
	}
	for _, c := range []struct{ typ, reason, message string }{
		{scorev1b1.PlanConditionApplied, w.applied, w.appliedMessage},
		{scorev1b1.PlanConditionHealthy, w.healthy, w.healthyMessage},
	} {
		got := meta.FindStatusCondition(st.Conditions, c.typ)
		if c.reason != "" && (got == nil || got.Reason != c.reason) {
			t.Fatalf("%s: %+v, want reason %s", c.typ, got, c.reason)
		}
		if c.message != "" && (got == nil || got.Message != c.message) {
			t.Fatalf("%s: %+v, want message %q", c.typ, got, c.message)
		}
	}
	if w.observedGeneration != 0 && st.ObservedGeneration != w.observedGeneration {
		t.Fatalf("observed generation %d, want %d", st.ObservedGeneration, w.observedGeneration)
	}
	if w.objects != nil {
		var got []string
		for _, o := range st.Objects {
			got = append(got, o.Cluster+":"+o.Kind+"/"+o.Name)
		}
		if !slices.Equal(got, w.objects) {
			t.Fatalf("objects %v, want %v", got, w.objects)
		}
	}
	if (d.Retry != nil) != w.retry {
		t.Fatalf("retry %v, want %v", d.Retry, w.retry)
	}
	if w.retryWraps != nil && !errors.Is(d.Retry, w.retryWraps) {
		t.Fatalf("retry %v does not wrap %v", d.Retry, w.retryWraps)
	}
	var events []string
	for _, e := range d.Events {
		events = append(events, e.Reason)
	}
	if !slices.Equal(events, w.events) {
		t.Fatalf("events %v, want %v", d.Events, w.events)
	}
	if (d.Blocked != nil) != w.blocked || d.Unblocked != w.unblocked {
		t.Fatalf("blocked %v unblocked %v, want %v %v", d.Blocked, d.Unblocked, w.blocked, w.unblocked)
	}
	if w.exposure == "" {
		if d.Exposure != nil {
			t.Fatalf("an exposure write: %+v", d.Exposure)
		}
		return
	}
	if d.Exposure == nil {
		t.Fatal("no exposure write")
	}
	for _, typ := range []string{scorev1b1.ExposureConditionHealthy, scorev1b1.ExposureConditionProvisioning, scorev1b1.ExposureConditionDegraded} {
		if got := meta.IsStatusConditionTrue(d.Exposure.Conditions, typ); got != (typ == w.exposure) {
			t.Fatalf("exposure %s is %v: %+v", typ, got, d.Exposure.Conditions)
		}
	}
}

// The exposure carries the endpoints and the runtime's conditions; conditions of others stay.
func TestExposureStatus(t *testing.T) {
	read := scorev1b1.WorkloadExposureStatus{Conditions: []metav1.Condition{{Type: "DNSNotReady", Status: metav1.ConditionTrue, Reason: "Other"}}}
	endpoints := exposure.Result{Exposures: []scorev1b1.Exposure{{URL: "http://web.team.svc.cluster.local:80"}}, Pending: map[string]string{scorev1b1.ExposureConditionLBPending: "Service web waits for an address."}}
	got := exposureStatus(Exposure{Status: read, Endpoints: endpoints}, Healthy, 7)
	if got.ObservedWorkloadGeneration != 7 || len(got.Exposures) != 1 {
		t.Fatalf("status %+v", got)
	}
	for typ, want := range map[string]metav1.ConditionStatus{"DNSNotReady": metav1.ConditionTrue, scorev1b1.ExposureConditionHealthy: metav1.ConditionTrue,
		scorev1b1.ExposureConditionProvisioning: metav1.ConditionFalse, scorev1b1.ExposureConditionDegraded: metav1.ConditionFalse,
		scorev1b1.ExposureConditionLBPending: metav1.ConditionTrue, scorev1b1.ExposureConditionIngressPending: metav1.ConditionFalse} {
		if c := meta.FindStatusCondition(got.Conditions, typ); c == nil || c.Status != want {
			t.Fatalf("%s: %+v, want %s", typ, c, want)
		}
	}
	if len(read.Conditions) != 1 {
		t.Fatal("the status read was changed")
	}
}

// An endpoint that turns reachable while the objects are still becoming healthy is
// written with their health, not on its own; once healthy, or when more than reachable
// changed, or for a new generation, what was derived is written.
func TestExposureReachableWithItsHealth(t *testing.T) {
	url := "http://web.team.svc.cluster.local:80"
	// What the first pass published: the objects becoming healthy, the endpoint not reachable.
	published := *exposureStatus(Exposure{Endpoints: exposure.Result{Exposures: []scorev1b1.Exposure{{URL: url, Reachable: ptr.To(false)}}}}, Provisioning, 7)
	reachable := exposure.Result{Exposures: []scorev1b1.Exposure{{URL: url, Reachable: ptr.To(true)}}}
	for _, c := range []struct {
		name          string
		endpoints     exposure.Result
		state         Health
		generation    int64
		wantReachable bool
	}{
		{"reachable while provisioning: kept as published", reachable, Provisioning, 7, false},
		{"reachable and healthy: written", reachable, Healthy, 7, true},
		{"reachable while provisioning a new generation: written", reachable, Provisioning, 8, true},
		{"another URL while provisioning: written", exposure.Result{Exposures: []scorev1b1.Exposure{{URL: "http://other:80", Reachable: ptr.To(true)}}}, Provisioning, 7, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := exposureStatus(Exposure{Status: published, Endpoints: c.endpoints}, c.state, c.generation)
			if r := got.Exposures[0].Reachable; r == nil || *r != c.wantReachable {
				t.Fatalf("reachable %v, want %v", r, c.wantReachable)
			}
		})
	}
	// Kept as published, the pass writes nothing.
	if got := exposureStatus(Exposure{Status: published, Endpoints: reachable}, Provisioning, 7); !equality.Semantic.DeepEqual(*got, published) {
		t.Fatalf("status %+v, want it as published", got)
	}
}

// What the garbage collector does not delete holds the plan; a move leaves the earlier
// cluster once everything is healthy here; a deletion that waits for a cluster says so.
func TestRelease(t *testing.T) {
	hub, member, scoped := obj("", "Deployment", "web", scorev1b1.HealthCurrent), obj("eu", "Deployment", "web", scorev1b1.HealthCurrent), obj("", "Namespace", "sandbox", scorev1b1.HealthCurrent)
	scoped.Namespace = ""
	if got := NotCollected([]scorev1b1.AppliedObject{hub, member, scoped}); !slices.Equal(got, []scorev1b1.AppliedObject{member, scoped}) {
		t.Fatalf("not collected: %v", got)
	}
	progressing := obj("us", "Deployment", "web", scorev1b1.HealthInProgress)
	for _, tc := range []struct {
		name               string
		applied, elsewhere []scorev1b1.AppliedObject
		want               bool
	}{
		{"healthy here, objects elsewhere", []scorev1b1.AppliedObject{hub}, []scorev1b1.AppliedObject{member}, true},
		{"not healthy here yet", []scorev1b1.AppliedObject{progressing}, []scorev1b1.AppliedObject{member}, false},
		{"nothing elsewhere", []scorev1b1.AppliedObject{hub}, nil, false},
	} {
		if got := Leave(tc.applied, tc.elsewhere); got != tc.want {
			t.Errorf("%s: leave %v, want %v", tc.name, got, tc.want)
		}
	}

	deleted := plan(onCluster("us"), projectedAt(2))
	now := metav1.Now()
	deleted.DeletionTimestamp = &now
	st := Releasing(deleted, []scorev1b1.AppliedObject{member, member})
	if c := meta.FindStatusCondition(st.Conditions, scorev1b1.PlanConditionApplied); c == nil || c.Reason != scorev1b1.PlanReasonClusterUnreachable ||
		st.Message != "Deletion waits for cluster eu to answer: 2 objects of the workload are there." || st.Phase != scorev1b1.PlanPhaseProjected {
		t.Fatalf("releasing: %+v", st)
	}
	left := Left{Deleted: map[string]int{"eu": 2}, Abandoned: map[string]int{"old": 1, "ap": 3}}
	var got []string
	for _, e := range ReleaseEvents(deleted, left) {
		got = append(got, e.Reason+": "+e.Message)
	}
	if !slices.Equal(got, []string{"ObjectsAbandoned: 3 objects on cluster ap were let go of: the cluster is no longer registered.",
		"ObjectsAbandoned: 1 objects on cluster old were let go of: the cluster is no longer registered."}) {
		t.Fatalf("a deleted plan's release events: %q", got)
	}
	moved := plan(onCluster("us"))
	if events := ReleaseEvents(moved, Left{Deleted: map[string]int{"eu": 2}}); len(events) != 1 || events[0].Message != "Deleted 2 objects from cluster eu: the workload is healthy on cluster us." {
		t.Fatalf("a move's release events: %+v", events)
	}
}

// TestMessagesAreStoredEscaped: a render error quoting a Workload's value full of terminal
// escapes reaches the plan's message and Applied condition escaped.
func TestMessagesAreStoredEscaped(t *testing.T) {
	d := From(Observed{Plan: plan(), Stopped: Render, Err: errors.New("a value: " + termtest.Hostile)})
	applied := meta.FindStatusCondition(d.Status.Conditions, scorev1b1.PlanConditionApplied)
	if applied == nil {
		t.Fatal("no Applied condition")
	}
	for what, msg := range map[string]string{"message": d.Status.Message, "Applied": applied.Message} {
		termtest.Safe(t, what, msg)
		if !strings.Contains(msg, termtest.Marker) {
			t.Errorf("%s: %q lost the escaped text", what, msg)
		}
	}
}
