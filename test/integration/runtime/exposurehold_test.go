package runtime

import (
	"fmt"
	"sync/atomic"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// exposureTemplate is a Deployment and the Service in front of it: the Service's cluster DNS
// name is the endpoint, known from the first apply, before the Deployment is available.
const exposureTemplate = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Workload.Name }}
spec:
  replicas: 1
  selector: {matchLabels: {app: {{ .Workload.Name }}}}
  template:
    metadata: {labels: {app: {{ .Workload.Name }}}}
    spec: {containers: [{name: main, image: nginx}]}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ .Workload.Name }}
spec:
  selector: {app: {{ .Workload.Name }}}
  ports: [{name: http, port: 80, targetPort: 8080}]
`

// exposureRuns numbers the runs of TestExposureCreatedToHealthyInOneStatusWrite in
// heldNamespace.
var exposureRuns atomic.Int64

// Each step's status written once: a Workload's exposure goes from created to healthy in one
// status write — its endpoint published with its health — not two, the endpoint with
// Provisioning and then Healthy. The runtime of heldNamespace holds
// progress for an hour, so the count does not depend on this machine's speed; every other
// namespace's runtime holds nothing and still writes two. No controller-manager runs here:
// the test writes the Deployment's status as kube-controller-manager would.
func TestExposureCreatedToHealthyInOneStatusWrite(t *testing.T) {
	if err := env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: heldNamespace, Name: "exposure-templates"},
		Data: map[string]string{"web.yaml": exposureTemplate}}); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	held := exposureToHealthy(t, heldNamespace, fmt.Sprintf("exposed-%d", exposureRuns.Add(1)), "exposure-templates", true)
	unheld := exposureToHealthy(t, setup(t, exposureTemplate), "exposed", "templates", false)
	t.Logf("exposure status writes from created to healthy: %d held, %d with no window", held, unheld)
	if held != 1 {
		t.Errorf("%d exposure status writes from created to healthy with a window, want 1: the endpoint with its health", held)
	}
	if unheld != 2 {
		t.Errorf("%d exposure status writes from created to healthy with no window, want 2: Provisioning, then Healthy", unheld)
	}
}

// exposureToHealthy takes plan name in ns, with its exposure, from created to Projected and
// the exposure healthy, and returns the runtime's exposure status writes on the way. Once the
// plan is Planning the exposure is checked: unpublished when held (the runtime writes the
// exposure before the plan in each pass), published with Provisioning and its endpoint when
// not.
func exposureToHealthy(t *testing.T, ns, name, configMap string, held bool) int64 {
	t.Helper()
	uid := "u-" + name
	e := newExposure(ns, name, uid)
	testenv.Create(t, env.Client, e)
	p := newPlan(ns, name, uid, testenv.Digest(exposureTemplate), `{}`)
	p.Spec.Template.Ref = "configmap://" + ns + "/" + configMap + "/web.yaml"
	testenv.Create(t, env.Client, p)
	url := fmt.Sprintf("http://%s.%s.svc.cluster.local:80", name, ns)
	testenv.Eventually(t, testenv.WaitTimeout, "the plan Planning on its Deployment", func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		if p.Status.Phase != scorev1b1.PlanPhasePlanning || len(p.Status.Objects) != 2 {
			return fmt.Errorf("status %s %+v", p.Status.Phase, p.Status.Objects)
		}
		return nil
	})
	published := func(condition string) error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(e), e); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(e.Status.Conditions, condition) || len(e.Status.Exposures) == 0 || e.Status.Exposures[0].URL != url {
			return fmt.Errorf("exposure %+v, want %s and %s", e.Status, condition, url)
		}
		return nil
	}
	if held {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(e), e); err != nil {
			t.Fatal(err)
		}
		if len(e.Status.Conditions) != 0 || len(e.Status.Exposures) != 0 {
			t.Fatalf("the exposure published while its objects become healthy: %+v", e.Status)
		}
	} else {
		testenv.Eventually(t, testenv.WaitTimeout, "the exposure published while its objects become healthy", func() error {
			return published(scorev1b1.ExposureConditionProvisioning)
		})
	}

	// Available: the plan is Projected, the exposure healthy.
	d := &appsv1.Deployment{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
		t.Fatal(err)
	}
	available(t, ctx, d, 1)
	testenv.Eventually(t, testenv.WaitTimeout, "the plan Projected and the exposure healthy", func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		if p.Status.Phase != scorev1b1.PlanPhaseProjected {
			return fmt.Errorf("plan %s %+v", p.Status.Phase, p.Status.Objects)
		}
		return published(scorev1b1.ExposureConditionHealthy)
	})
	n, ok := exposureStatusWrites.Load(ns + "/" + name)
	if !ok {
		return 0
	}
	return n.(*atomic.Int64).Load()
}
