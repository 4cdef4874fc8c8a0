package runtime

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/apierror"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// A transient apply error keeps what the plan has. A validating webhook that fails closed
// (its server answers 500, as one restarting does) makes the API server answer the runtime's
// apply with 500 Internal error, which asks to try again: the Projected plan stays Projected
// and its status is not rewritten while the webhook fails, the apply is retried with backoff,
// and it goes through once the webhook answers again.
//
// Failing the plan (Failed, RuntimeProvisioning) on any error the runtime does not name would
// take its Workload from Ready to failed and back, while the provisioner keeps a Bound claim
// Bound through the same error.
func TestTransientApplyErrorKeepsThePlan(t *testing.T) {
	text := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Workload.Name }}-settings\ndata:\n  mode: {{ .Values.mode }}\n"
	ns := setup(t, text)
	p := newPlan(ns, "steady", "u10", testenv.Digest(text), `{"mode":"quiet"}`)
	testenv.Create(t, env.Client, p)
	waitProjected(t, p, 1)
	settled := p.Status.DeepCopy()

	hook := startWebhook(t, ns, "steady")
	hook.fail.Store(true)
	hook.install(t)

	// Every version of the plan from here on, to tell that it never left Projected.
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(ctx, &scorev1b1.WorkloadPlanList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	before := p.DeepCopy()
	p.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"mode":"loud"}`)}
	if err := env.Client.Patch(ctx, p, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	// The runtime meets the failing webhook, and tries again.
	testenv.Eventually(t, 30*time.Second, "the runtime's apply refused three times", func() error {
		if n := hook.refused.Load(); n < 3 {
			return fmt.Errorf("%d refused", n)
		}
		return nil
	})
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
		t.Fatal(err)
	}
	if p.Status.Phase != scorev1b1.PlanPhaseProjected || p.Status.ObservedGeneration != 1 {
		t.Fatalf("while the webhook fails the plan is %s (%s: %s) at generation %d, want Projected at 1",
			p.Status.Phase, p.Status.Reason, p.Status.Message, p.Status.ObservedGeneration)
	}
	if diff := statusDiff(settled, &p.Status); diff != "" {
		t.Fatalf("the status was rewritten through a transient error: %s", diff)
	}

	hook.fail.Store(false)
	waitProjected(t, p, 2)
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "steady-settings"}, cm); err != nil || cm.Data["mode"] != "loud" {
		t.Fatalf("the retried apply did not go through: %v %v", err, cm.Data)
	}
	// Every version the watch delivered, up to the one that applied generation 2, was Projected.
	timeout := time.After(20 * time.Second)
	for {
		select {
		case e, ok := <-w.ResultChan():
			seen, isPlan := e.Object.(*scorev1b1.WorkloadPlan)
			if !ok || !isPlan {
				t.Fatalf("the watch ended: %v", e.Object)
			}
			if seen.Status.Phase != scorev1b1.PlanPhaseProjected {
				t.Fatalf("the plan left Projected: %s %s %s", seen.Status.Phase, seen.Status.Reason, seen.Status.Message)
			}
			if seen.Status.ObservedGeneration == 2 {
				return
			}
		case <-timeout:
			t.Fatal("the watch did not deliver the plan at generation 2")
		}
	}
}

// waitProjected waits until the plan is Projected for generation.
func waitProjected(t *testing.T, p *scorev1b1.WorkloadPlan, generation int64) {
	t.Helper()
	testenv.Eventually(t, 20*time.Second, fmt.Sprintf("Projected at generation %d", generation), func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		if p.Status.Phase != scorev1b1.PlanPhaseProjected || p.Status.ObservedGeneration != generation {
			return fmt.Errorf("%s at %d: %s %s", p.Status.Phase, p.Status.ObservedGeneration, p.Status.Reason, p.Status.Message)
		}
		return nil
	})
}

// statusDiff names what differs between two plan statuses, "" when nothing does.
func statusDiff(want, got *scorev1b1.WorkloadPlanStatus) string {
	a, _ := json.Marshal(want)
	b, _ := json.Marshal(got)
	if string(a) == string(b) {
		return ""
	}
	return fmt.Sprintf("\nwas %s\nnow %s", a, b)
}

// webhook is a validating admission webhook in the test's process for the objects of one
// Workload in one namespace. While fail is set its server answers 500, and the API server,
// its failure policy being Fail, refuses the write with 500 Internal error.
type webhook struct {
	ns, workload string
	srv          *httptest.Server
	fail         atomic.Bool
	// refused counts the runtime's writes refused (the test's own dry runs aside).
	refused atomic.Int64
}

func startWebhook(t *testing.T, ns, workload string) *webhook {
	h := &webhook{ns: ns, workload: workload}
	h.srv = httptest.NewTLSServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *webhook) serve(w http.ResponseWriter, req *http.Request) {
	review := &admissionv1.AdmissionReview{}
	if err := json.NewDecoder(req.Body).Decode(review); err != nil || review.Request == nil {
		http.Error(w, "not an admission review", http.StatusBadRequest)
		return
	}
	if h.fail.Load() {
		if review.Request.DryRun == nil || !*review.Request.DryRun {
			h.refused.Add(1)
		}
		http.Error(w, "restarting", http.StatusInternalServerError)
		return
	}
	review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
	review.Request = nil
	_ = json.NewEncoder(w).Encode(review)
}

// install registers the webhook and waits until the API server calls it: a dry-run create
// of a ConfigMap of the Workload is refused, with an error the one classification calls
// transient.
func (h *webhook) install(t *testing.T) {
	t.Helper()
	caBundle := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: h.srv.Certificate().Raw})
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "fails-closed-" + h.ns},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "fails-closed.score.test",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To(h.srv.URL + "/validate"), CABundle: caBundle},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: h.ns}},
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{scorev1b1.LabelWorkload: h.workload}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](5),
		}},
	}
	testenv.Create(t, env.Client, cfg)
	t.Cleanup(func() { _ = env.Client.Delete(ctx, cfg) })
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "probe", Labels: map[string]string{scorev1b1.LabelWorkload: h.workload}}}
	testenv.Eventually(t, 20*time.Second, "the webhook in effect", func() error {
		err := env.Client.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		if err == nil {
			return fmt.Errorf("a dry run went through")
		}
		if !apierrors.IsInternalError(err) || apierror.Classify(err) != apierror.Transient {
			t.Fatalf("the API server's answer is %v (%s), want a transient 500", err, apierror.Classify(err))
		}
		return nil
	})
}
