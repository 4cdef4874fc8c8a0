package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/planner"
	"github.com/score-orchestrator/score-orchestrator/internal/testenv"
	"github.com/score-orchestrator/score-orchestrator/internal/workloadstatus"
)

func zapLevel() zapcore.Level {
	if os.Getenv("TEST_VERBOSE_CONTROLLER") != "" {
		return zapcore.DebugLevel
	}
	return zapcore.ErrorLevel
}

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
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "score-system", Name: "orchestrator-config"}}
	err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm)
	cm.Data = map[string]string{"config.yaml": doc}
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

var nsCounter int

// namespace creates a fresh namespace for one test.
func namespace(t *testing.T) string {
	t.Helper()
	nsCounter++
	name := fmt.Sprintf("t%02d-%s", nsCounter, strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name())))
	if len(name) > 63 {
		name = strings.TrimRight(name[:63], "-")
	}
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	return name
}

type wlOpt func(*scorev1b1.Workload)

func workload(ns, name string, opts ...wlOpt) *scorev1b1.Workload {
	w := &scorev1b1.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: scorev1b1.WorkloadSpec{
			Containers: map[string]scorev1b1.Container{"main": {Image: "nginx:1.27"}},
			Service:    &scorev1b1.Service{Ports: map[string]scorev1b1.ServicePort{"http": {Port: 80}}},
		},
	}
	for _, o := range opts {
		o(w)
	}
	return w
}

func withVar(k, v string) wlOpt {
	return func(w *scorev1b1.Workload) {
		c := w.Spec.Containers["main"]
		if c.Variables == nil {
			c.Variables = map[string]string{}
		}
		c.Variables[k] = v
		w.Spec.Containers["main"] = c
	}
}

func withResource(key, typ string, annotations ...string) wlOpt {
	return func(w *scorev1b1.Workload) {
		if w.Spec.Resources == nil {
			w.Spec.Resources = map[string]scorev1b1.Resource{}
		}
		r := scorev1b1.Resource{Type: typ}
		if len(annotations) == 2 {
			r.Metadata = &apiextensionsv1.JSON{Raw: []byte(`{"annotations":{"` + annotations[0] + `":"` + annotations[1] + `"}}`)}
		}
		w.Spec.Resources[key] = r
	}
}

func withParams(key, params string) wlOpt {
	return func(w *scorev1b1.Workload) {
		r := w.Spec.Resources[key]
		r.Params = &apiextensionsv1.JSON{Raw: []byte(params)}
		w.Spec.Resources[key] = r
	}
}

func withAnnotation(k, v string) wlOpt {
	return func(w *scorev1b1.Workload) {
		if w.Annotations == nil {
			w.Annotations = map[string]string{}
		}
		w.Annotations[k] = v
	}
}

func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := env.Client.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
}

// eventually waits for check to pass.
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	testenv.Eventually(t, 20*time.Second, what, check)
}

// consistently checks that check keeps returning nil for a while.
func consistently(t *testing.T, what string, d time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if err := check(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
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
	var w *scorev1b1.Workload
	eventually(t, fmt.Sprintf("%s %s=%s/%s", name, typ, status, reason), func() error {
		w = &scorev1b1.Workload{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, w); err != nil {
			return err
		}
		c := meta.FindStatusCondition(w.Status.Conditions, typ)
		if c == nil {
			return fmt.Errorf("no %s condition yet", typ)
		}
		if c.Status != status || c.Reason != string(reason) || c.ObservedGeneration != w.Generation {
			return fmt.Errorf("%s is %s/%s (gen %d of %d): %s", typ, c.Status, c.Reason, c.ObservedGeneration, w.Generation, c.Message)
		}
		return nil
	})
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

func condition(w *scorev1b1.Workload, typ string) metav1.Condition {
	if c := meta.FindStatusCondition(w.Status.Conditions, typ); c != nil {
		return *c
	}
	return metav1.Condition{}
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
