package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/planner"
	"github.com/score-orchestrator/score-orchestrator/internal/status/workloadstatus"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

const digest = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

// baseConfig is the Orchestrator Config most tests run under.
const baseConfig = `apiVersion: score.dev/v1b1
kind: OrchestratorConfig
profiles:
  - name: web-service
    backends:
      - backendId: k8s-web
        runtimeClass: kubernetes
        priority: 5
        version: 1.0.0
        template: {kind: manifests, ref: "configmap://score-system/templates/web.yaml", digest: "` + digest + `", values: {replicas: 1}}
      - backendId: k8s-web-gpu
        runtimeClass: kubernetes
        priority: 1
        version: 1.0.0
        template: {kind: manifests, ref: "configmap://score-system/templates/web-gpu.yaml", digest: "` + digest + `"}
        constraints: {features: [gpu]}
  - name: batch-job
    backends:
      - backendId: k8s-job
        runtimeClass: kubernetes
        version: 1.0.0
        template: {kind: manifests, ref: "configmap://score-system/templates/job.yaml", digest: "` + digest + `"}
defaults:
  profile: web-service
provisioners:
  - uri: template://test/postgres
    type: postgres
    deprovisionPolicy: Retain
  - uri: template://test/redis
    type: redis
endpoint:
  publicOnly: false
`

var ctx = context.Background()

// applyConfig writes the Orchestrator Config ConfigMap.
func applyConfig(t *testing.T, doc string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "score-system"}}
	if err := env.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	putConfigMap(t, "orchestrator-config", map[string]string{"config.yaml": doc})
}

// putConfigMap creates or replaces a ConfigMap of score-system.
func putConfigMap(t *testing.T, name string, data map[string]string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "score-system", Name: name}}
	err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm)
	cm.Data = data
	switch {
	case apierrors.IsNotFound(err):
		err = env.Client.Create(ctx, cm)
	case err == nil:
		err = env.Client.Update(ctx, cm)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// withNewerBackend adds to a config the backend k8s-web-v2 (same priority, newer version), which
// then wins for web-service Workloads: a Workload moving to it shows the config is in use.
func withNewerBackend(doc string) string {
	return strings.Replace(doc, "  - name: batch-job", `      - backendId: k8s-web-v2
        runtimeClass: kubernetes
        priority: 5
        version: 2.0.0
        template: {kind: manifests, ref: "configmap://score-system/templates/web-v2.yaml", digest: "`+digest+`"}
  - name: batch-job`, 1)
}

// workload builds a Workload that publishes port 80, which the exposure and endpoint paths
// need.
func workload(ns, name string, opts ...testenv.WorkloadOption) *scorev1b1.Workload {
	return testenv.Workload(ns, name, append([]testenv.WorkloadOption{testenv.WithPort("http", 80)}, opts...)...)
}

// eventually waits for check to pass.
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	testenv.Eventually(t, 20*time.Second, what, check)
}

// requestReconcile is the positive control that comes before asserting that nothing
// happened: it asks the orchestrator to process the Workload again, as scorectl reconcile does
// (a new score.dev/reconcile-requested-at), and waits for the answer, the request echoed in
// the status. The orchestrator hands a Workload to one pass at a time, and the pass that
// answers read the Workload after the request: every change of the Workload the orchestrator
// saw before has been processed by then. (A change of a claim, plan or exposure comes through
// a watch of its own, in no set order with the Workload's: see seenByOrchestrator.) The
// request is handed on to the Workload's claims and plan, whose runtime the test may have to
// play again; where writes are counted, moveEndpoint is the probe.
func requestReconcile(t *testing.T, ns, name string) *scorev1b1.Workload {
	t.Helper()
	w := get(t, ns, name)
	requested := time.Now().UTC().Format(time.RFC3339Nano)
	if requested == w.Annotations[scorev1b1.AnnotationReconcileRequestedAt] {
		requested += "-again"
	}
	// A merge patch, as scorectl reconcile sends: an update could conflict with the
	// orchestrator's own metadata writes.
	patch := client.MergeFrom(w.DeepCopy())
	if w.Annotations == nil {
		w.Annotations = map[string]string{}
	}
	w.Annotations[scorev1b1.AnnotationReconcileRequestedAt] = requested
	if err := env.Client.Patch(ctx, w, patch); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the orchestrator's answer to the reconcile request "+requested, func() error {
		w = get(t, ns, name)
		if w.Status.LastHandledReconcileAt != requested {
			return fmt.Errorf("lastHandledReconcileAt %q", w.Status.LastHandledReconcileAt)
		}
		return nil
	})
	return w
}

// moveEndpoint is the positive control where the orchestrator's writes or events are
// counted. It plays the runtime moving the Workload's published endpoint to a new URL, all
// else as it was, and waits for the orchestrator's answer, the endpoint mirrored: every
// earlier change of the exposure has been processed by then (of the Workload, a claim or the
// plan, once seenByOrchestrator showed it). The answer costs endpointMoveWrites and no event:
// the endpoint is no condition. (A reconcile request is handed on to the claims and the plan,
// a write for each.)
func moveEndpoint(t *testing.T, ns, name string) {
	t.Helper()
	url := fmt.Sprintf("https://%s.%s.example.com/moved-%d", name, ns, time.Now().UnixNano())
	eventually(t, "exposure status "+name, func() error {
		e := &scorev1b1.WorkloadExposure{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, e); err != nil {
			return err
		}
		if len(e.Status.Exposures) == 0 {
			return fmt.Errorf("no endpoint published to move")
		}
		e.Status.Exposures[0].URL = url
		return env.Client.Status().Update(ctx, e)
	})
	endpointIs(t, ns, name, url)
}

// endpointMoveWrites is what moveEndpoint costs the orchestrator: the status.
const endpointMoveWrites = 1

// seenByOrchestrator waits until the orchestrator's cache shows obj (read into it) as check
// wants it. A change to a claim, plan or exposure reaches the orchestrator through a watch of
// its own, in no set order with a later change to the Workload: a reconcile request answered
// after this was answered by a pass that read the change.
func seenByOrchestrator[T client.Object](t *testing.T, obj T, check func(T) error) {
	t.Helper()
	eventually(t, "the orchestrator's cache showing "+obj.GetName(), func() error {
		if err := orchestratorCache.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		return check(obj)
	})
}

// changeSpec changes the Workload's spec (a variable of its main container) and waits for
// the orchestrator's answer, a status that observed the new generation: the positive control
// for a Workload being deleted, whose passes answer no reconcile request.
func changeSpec(t *testing.T, ns, name string) *scorev1b1.Workload {
	t.Helper()
	w := get(t, ns, name)
	patch := client.MergeFrom(w.DeepCopy())
	testenv.WithVar("SPEC_CHANGED_AT", time.Now().UTC().Format(time.RFC3339Nano))(w)
	if err := env.Client.Patch(ctx, w, patch); err != nil {
		t.Fatal(err)
	}
	generation := w.Generation
	eventually(t, fmt.Sprintf("the orchestrator's answer to generation %d", generation), func() error {
		w = get(t, ns, name)
		if w.Status.ObservedGeneration != generation {
			return fmt.Errorf("observedGeneration %d", w.Status.ObservedGeneration)
		}
		return nil
	})
	return w
}

func get(t *testing.T, ns, name string) *scorev1b1.Workload {
	t.Helper()
	w := &scorev1b1.Workload{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, w); err != nil {
		t.Fatal(err)
	}
	return w
}

// conditionIs waits until the Workload's condition has the status and reason, and checks
// every condition's message for runtime nouns.
func conditionIs(t *testing.T, ns, name, typ string, status metav1.ConditionStatus, reason scorev1b1.Reason) *scorev1b1.Workload {
	t.Helper()
	w := testenv.WaitForCondition(t, env.Client, client.ObjectKey{Namespace: ns, Name: name}, typ, status, reason)
	checkNeutral(t, w)
	return w
}

func checkNeutral(t *testing.T, w *scorev1b1.Workload) {
	t.Helper()
	for _, c := range w.Status.Conditions {
		if n := workloadstatus.RuntimeNoun(c.Message); n != "" {
			t.Errorf("condition %s message %q names %q", c.Type, c.Message, n)
		}
		if !scorev1b1.Reason(c.Reason).IsKnown() {
			t.Errorf("condition %s has reason %q outside the closed set", c.Type, c.Reason)
		}
	}
	for _, c := range w.Status.Claims {
		if n := workloadstatus.RuntimeNoun(c.Message); n != "" {
			t.Errorf("claim %s message %q names %q", c.Key, c.Message, n)
		}
	}
}

func claimOf(t *testing.T, w *scorev1b1.Workload, key, typ string) *scorev1b1.ResourceClaim {
	t.Helper()
	c := &scorev1b1.ResourceClaim{}
	name := planner.ClaimName(w.Name, key, typ)
	eventually(t, "claim "+name, func() error {
		return env.Client.Get(ctx, client.ObjectKey{Namespace: w.Namespace, Name: name}, c)
	})
	return c
}

// bind plays the provisioner: the claim becomes Bound with these outputs; secret outputs
// go to a Secret named after the claim.
func bind(t *testing.T, c *scorev1b1.ResourceClaim, outputs map[string]any, secrets map[string]string) {
	t.Helper()
	if len(secrets) > 0 {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: c.Name + "-outputs"}, StringData: secrets}
		if err := env.Client.Create(ctx, s); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	eventually(t, "binding "+c.Name, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(c), c); err != nil {
			return err
		}
		c.Status = scorev1b1.ResourceClaimStatus{ObservedGeneration: c.Generation, Phase: scorev1b1.ClaimPhaseBound, OutputsAvailable: true, Provisioner: "test"}
		if len(outputs) > 0 {
			raw, _ := json.Marshal(outputs)
			c.Status.Outputs = &apiextensionsv1.JSON{Raw: raw}
		}
		if len(secrets) > 0 {
			c.Status.SecretRef = &scorev1b1.OutputsSecretRef{Name: c.Name + "-outputs"}
			for k := range secrets {
				c.Status.SecretRef.Keys = append(c.Status.SecretRef.Keys, k)
			}
		}
		return env.Client.Status().Update(ctx, c)
	})
}

// release plays the provisioner on a claim the orchestrator deleted: it removes the
// provisioner's finalizer, which the orchestrator set at creation, and waits until the claim
// is gone (a new claim of the same name may follow it).
func release(t *testing.T, claim *scorev1b1.ResourceClaim) {
	t.Helper()
	eventually(t, "claim "+claim.Name+" released", func() error {
		c := &scorev1b1.ResourceClaim{}
		switch err := env.Client.Get(ctx, client.ObjectKeyFromObject(claim), c); {
		case apierrors.IsNotFound(err) || err == nil && c.UID != claim.UID:
			return nil
		case err != nil:
			return err
		case c.DeletionTimestamp.IsZero():
			return fmt.Errorf("not deleted")
		}
		if controllerutil.RemoveFinalizer(c, scorev1b1.ClaimFinalizer) {
			if err := env.Client.Update(ctx, c); err != nil {
				return err
			}
		}
		return fmt.Errorf("still there, finalizers %v", c.Finalizers)
	})
}

// setClaimStatus plays the provisioner with an arbitrary status.
func setClaimStatus(t *testing.T, c *scorev1b1.ResourceClaim, status scorev1b1.ResourceClaimStatus) {
	t.Helper()
	eventually(t, "claim status "+c.Name, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(c), c); err != nil {
			return err
		}
		status.ObservedGeneration = c.Generation
		c.Status = status
		return env.Client.Status().Update(ctx, c)
	})
}

func planOf(t *testing.T, ns, name string) *scorev1b1.WorkloadPlan {
	t.Helper()
	p := &scorev1b1.WorkloadPlan{}
	eventually(t, "plan "+name, func() error { return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p) })
	return p
}

// project plays the runtime: the current plan is Projected.
func project(t *testing.T, ns, name string, phase scorev1b1.PlanPhase, reason scorev1b1.Reason) {
	t.Helper()
	eventually(t, "plan status "+name, func() error {
		p := &scorev1b1.WorkloadPlan{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
			return err
		}
		p.Status = scorev1b1.WorkloadPlanStatus{ObservedGeneration: p.Generation, Phase: phase, Reason: reason}
		return env.Client.Status().Update(ctx, p)
	})
}

// expose plays the runtime: it publishes exposures and conditions for a generation.
func expose(t *testing.T, ns, name string, generation int64, exposures []scorev1b1.Exposure, conditions ...string) {
	t.Helper()
	eventually(t, "exposure status "+name, func() error {
		e := &scorev1b1.WorkloadExposure{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, e); err != nil {
			return err
		}
		e.Status = scorev1b1.WorkloadExposureStatus{ObservedWorkloadGeneration: generation, Exposures: exposures}
		for _, c := range conditions {
			e.Status.Conditions = append(e.Status.Conditions, metav1.Condition{Type: c, Status: metav1.ConditionTrue, Reason: c, LastTransitionTime: metav1.Now()})
		}
		return env.Client.Status().Update(ctx, e)
	})
}

func countEvents(t *testing.T, ns, name string) int {
	t.Helper()
	return countReasonEvents(t, ns, name, "")
}

// countReasonEvents counts the events on a Workload, of one reason when reason is set.
func countReasonEvents(t *testing.T, ns, name, reason string) int {
	t.Helper()
	var events eventsv1.EventList
	if err := env.Client.List(ctx, &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range events.Items {
		if e.Regarding.Kind == "Workload" && e.Regarding.Name == name && (reason == "" || e.Reason == reason) {
			n++
			if noun := workloadstatus.RuntimeNoun(e.Note); noun != "" {
				t.Errorf("event %q names %q", e.Note, noun)
			}
		}
	}
	return n
}
