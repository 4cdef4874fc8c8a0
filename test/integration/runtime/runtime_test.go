// Package runtime tests the Kubernetes runtime on a real kube-apiserver and etcd. No
// controller-manager runs here, so Deployments never become available: health and the way
// to Ready are covered by the simulated-cluster end-to-end test.
package runtime

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	runtimectl "github.com/score-orchestrator/score-orchestrator/internal/controller/runtime"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/workers"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/ocifetch"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/templates"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

var (
	env *testenv.Env
	ctx = context.Background()
)

// pullSecret is the runtime's registry pull secret (--oci-pull-secret); a test that needs it
// creates it.
var pullSecret = types.NamespacedName{Namespace: "default", Name: "registry-pull"}

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, func(ctx context.Context, e *testenv.Env) error {
		env = e
		if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: heldNamespace}}); err != nil {
			return err
		}
		if err := startRuntime(ctx, fields.OneTermNotEqualSelector("metadata.namespace", heldNamespace), 0); err != nil {
			return err
		}
		return startRuntime(ctx, fields.OneTermEqualSelector("metadata.namespace", heldNamespace), time.Hour)
	}))
}

// heldNamespace is served by a runtime that holds a plan's progress for an hour
// (--progress-hold), and counts its plans' status writes (heldStatusWrites), so that the count
// does not depend on this machine's speed. Every other namespace is served by a runtime that
// holds nothing, so that each test sees every step at once.
const heldNamespace = "held-progress"

// heldStatusWrites counts the plan status writes of the runtime of heldNamespace, by plan name.
var heldStatusWrites sync.Map

// exposureStatusWrites counts both runtimes' exposure status writes, by namespace/name.
var exposureStatusWrites sync.Map

// startRuntime runs a runtime over the namespaces the selector admits, holding a plan's
// progress for hold, and counting its exposure status writes (exposureStatusWrites). Its workers are adaptive, from two: every test goes through the gate
// (internal/controller/workers), which lets more through as requests wait.
func startRuntime(ctx context.Context, namespaces fields.Selector, hold time.Duration) error {
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			rest, ok := strings.CutSuffix(req.URL.Path, "/status")
			switch {
			case !ok || req.Method == http.MethodGet:
			case hold > 0 && strings.Contains(rest, "/workloadplans/"):
				n, _ := heldStatusWrites.LoadOrStore(path.Base(rest), new(atomic.Int64))
				n.(*atomic.Int64).Add(1)
			case strings.Contains(rest, "/workloadexposures/"):
				key := path.Base(path.Dir(path.Dir(rest))) + "/" + path.Base(rest)
				n, _ := exposureStatusWrites.LoadOrStore(key, new(atomic.Int64))
				n.(*atomic.Int64).Add(1)
			}
			return rt.RoundTrip(req)
		})
	})
	pushback := workers.NewPushback()
	cfg.Wrap(pushback.Wrap)
	opts := testenv.ManagerOptions()
	opts.Cache.DefaultFieldSelector = namespaces
	if opts.Cache.ByObject == nil {
		opts.Cache.ByObject = map[client.Object]cache.ByObject{}
	}
	// Namespaces are cluster-scoped: the namespace field selector does not apply to them.
	opts.Cache.ByObject[&corev1.Namespace{}] = cache.ByObject{Field: fields.Everything()}
	opts.Controller = config.Controller{SkipNameValidation: ptr.To(true)} // two runtimes in one process
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return err
	}
	store, err := healthConfig()
	if err != nil {
		return err
	}
	r := &runtimectl.Reconciler{Client: mgr.GetClient(), Templates: &templates.Source{Reader: mgr.GetAPIReader(), OCI: &ocifetch.Fetcher{PlainHTTP: true, PullSecret: &ocifetch.PullSecret{Reader: mgr.GetAPIReader(), Key: pullSecret}}}, Config: store,
		Recorder: mgr.GetEventRecorder("score-runtime"), Workers: &workers.Adaptive{Start: 2, Pushback: pushback}, ProgressHold: hold}
	if err := r.SetupWithManager(mgr); err != nil {
		return err
	}
	go func() { _ = mgr.Start(ctx) }()
	return nil
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func templateText(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../../config/templates/web-service.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// setup creates a namespace for the test with the template ConfigMap and returns it.
func setup(t *testing.T, text string) string {
	t.Helper()
	ns := testenv.Namespace(t, env.Client)
	testenv.Create(t, env.Client, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "templates"}, Data: map[string]string{"web.yaml": text}})
	return ns
}

func newPlan(ns, name, uid, templateDigest, values string) *scorev1b1.WorkloadPlan {
	return &scorev1b1.WorkloadPlan{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: scorev1b1.WorkloadPlanSpec{
			WorkloadRef: scorev1b1.LocalWorkloadRef{Name: name, UID: uid}, ObservedWorkloadGeneration: 1,
			RuntimeClass: "kubernetes", BackendID: "k8s-web",
			Template:   scorev1b1.TemplateRef{Kind: scorev1b1.TemplateManifests, Ref: "configmap://" + ns + "/templates/web.yaml", Digest: templateDigest},
			Values:     &apiextensionsv1.JSON{Raw: []byte(values)},
			Projection: scorev1b1.Projection{Containers: []scorev1b1.ContainerProjection{{Name: "main"}}},
		},
	}
}

// newExposure is the exposure registration of the Workload a plan of newPlan's belongs to.
func newExposure(ns, name, uid string) *scorev1b1.WorkloadExposure {
	return &scorev1b1.WorkloadExposure{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: scorev1b1.WorkloadExposureSpec{WorkloadRef: scorev1b1.WorkloadRef{Name: name, Namespace: ns, UID: uid}, RuntimeClass: "kubernetes", ObservedWorkloadGeneration: 1}}
}

const webValues = `{"containers":{"main":{"image":"nginx"}},"service":{"ports":{"http":{"port":80,"targetPort":8080,"protocol":"TCP"},"admin":{"port":9000,"targetPort":9000,"protocol":"TCP"}}}}`

func TestApplyPruneAndRepair(t *testing.T) {
	text := templateText(t)
	ns := setup(t, text)
	exposure := newExposure(ns, "web", "u1")
	testenv.Create(t, env.Client, exposure)
	p := newPlan(ns, "web", "u1", testenv.Digest(text), webValues)
	testenv.Create(t, env.Client, p)
	dep, svc := &appsv1.Deployment{}, &corev1.Service{}
	testenv.Eventually(t, 20*time.Second, "applied", func() error {
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, dep); err != nil {
			return err
		}
		return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, svc)
	})
	if dep.Annotations[scorev1b1.AnnotationWorkloadUID] != "u1" || !metav1.IsControlledBy(dep, p) || dep.Labels[scorev1b1.LabelWorkload] != "web" {
		t.Fatalf("ownership %v %v", dep.Annotations, dep.OwnerReferences)
	}
	testenv.Eventually(t, 20*time.Second, "plan status and exposure", func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		if len(p.Status.Objects) != 2 || p.Status.Phase != scorev1b1.PlanPhasePlanning {
			return fmt.Errorf("status %s %+v", p.Status.Phase, p.Status.Objects)
		}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(exposure), exposure); err != nil {
			return err
		}
		// The port named http comes first, the order a person calls them in.
		if len(exposure.Status.Exposures) != 2 || exposure.Status.Exposures[0].URL != "http://web."+ns+".svc.cluster.local:80" {
			return fmt.Errorf("exposures %+v", exposure.Status.Exposures)
		}
		return nil
	})

	t.Run("a deleted object is recreated", func(t *testing.T) {
		uid := dep.UID
		if err := env.Client.Delete(ctx, dep); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 20*time.Second, "recreated", func() error {
			d := &appsv1.Deployment{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(dep), d); err != nil {
				return err
			}
			if d.UID == uid {
				return fmt.Errorf("not yet")
			}
			return nil
		})
	})

	t.Run("drift is corrected", func(t *testing.T) {
		d := &appsv1.Deployment{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(dep), d); err != nil {
			t.Fatal(err)
		}
		d.Spec.Template.Spec.Containers[0].Image = "evil:latest"
		if err := env.Client.Update(ctx, d); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 20*time.Second, "image restored", func() error {
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(dep), d); err != nil {
				return err
			}
			if d.Spec.Template.Spec.Containers[0].Image != "nginx" {
				return fmt.Errorf("image %s", d.Spec.Template.Spec.Containers[0].Image)
			}
			return nil
		})
	})

	t.Run("objects a new render drops are pruned", func(t *testing.T) {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			t.Fatal(err)
		}
		p.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"containers":{"main":{"image":"nginx"}}}`)}
		if err := env.Client.Update(ctx, p); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 20*time.Second, "service pruned", func() error {
			err := env.Client.Get(ctx, client.ObjectKeyFromObject(svc), &corev1.Service{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("still there: %v", err)
		})
	})
}

// A ConfigMap a template renders is watched like any applied object: its drift is corrected.
// The cache options must not limit every ConfigMap informer of the process to the
// Orchestrator Config's ConfigMap, or the runtime never sees the ConfigMaps it applies.
func TestAppliedConfigMapDriftIsCorrected(t *testing.T) {
	text := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Workload.Name }}-settings\ndata:\n  mode: quiet\n"
	ns := setup(t, text)
	testenv.Create(t, env.Client, newPlan(ns, "cfg", "u1", testenv.Digest(text), `{}`))
	cm := &corev1.ConfigMap{}
	key := client.ObjectKey{Namespace: ns, Name: "cfg-settings"}
	testenv.Eventually(t, 20*time.Second, "applied", func() error { return env.Client.Get(ctx, key, cm) })
	cm.Data["mode"] = "loud"
	if err := env.Client.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 20*time.Second, "drift corrected", func() error {
		if err := env.Client.Get(ctx, key, cm); err != nil {
			return err
		}
		if cm.Data["mode"] != "quiet" {
			return fmt.Errorf("mode %q", cm.Data["mode"])
		}
		return nil
	})
}

func TestConflictingObjectIsRefused(t *testing.T) {
	text := templateText(t)
	ns := setup(t, text)
	other := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api", Annotations: map[string]string{scorev1b1.AnnotationWorkloadUID: "someone-else"}},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 1}}}}
	testenv.Create(t, env.Client, other)
	p := newPlan(ns, "api", "u2", testenv.Digest(text), webValues)
	testenv.Create(t, env.Client, p)
	waitPlanFailed(t, p, "Service api exists and belongs to another workload")
	if p.Status.Reason != scorev1b1.ReasonPermissionDenied {
		t.Fatalf("reason %s", p.Status.Reason)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(other), other); err != nil || other.Annotations[scorev1b1.AnnotationWorkloadUID] != "someone-else" || len(other.OwnerReferences) > 0 {
		t.Fatalf("the other workload's object was touched: %v %+v", err, other.ObjectMeta)
	}
}

func TestTemplateDigestIsVerified(t *testing.T) {
	text := templateText(t)
	ns := setup(t, text)
	p := newPlan(ns, "tampered", "u3", testenv.Digest(text+"# changed"), webValues)
	testenv.Create(t, env.Client, p)
	waitPlanFailed(t, p, "does not match its digest")
	testenv.Eventually(t, 20*time.Second, "a warning event", func() error {
		var events eventsv1.EventList
		if err := env.Client.List(ctx, &events, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Reason == "TemplateDigestMismatch" && e.Type == corev1.EventTypeWarning && e.Regarding.Name == "tampered" {
				return nil
			}
		}
		return fmt.Errorf("%d events, none TemplateDigestMismatch", len(events.Items))
	})
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "tampered"}, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
		t.Fatalf("nothing may be applied from a template that fails its digest: %v", err)
	}
}

func TestInvalidObjectFailsThePlan(t *testing.T) {
	text := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Bad_Name\n"
	ns := setup(t, text)
	p := newPlan(ns, "bad", "u4", testenv.Digest(text), webValues)
	testenv.Create(t, env.Client, p)
	waitPlanFailed(t, p, `ConfigMap "Bad_Name" is invalid`)
}

// available writes a Deployment's status as the deployment controller does once n of its
// replicas are available.
func available(t *testing.T, ctx context.Context, d *appsv1.Deployment, n int32) {
	t.Helper()
	d.Status = testenv.DeploymentStatus(d, n)
	if err := env.Client.Status().Update(ctx, d); err != nil {
		t.Fatal(err)
	}
}

// waitPlanFailed waits until the plan is Failed with a message containing want.
func waitPlanFailed(t *testing.T, p *scorev1b1.WorkloadPlan, want string) {
	t.Helper()
	testenv.Eventually(t, 20*time.Second, "failed with "+want, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		if p.Status.Phase != scorev1b1.PlanPhaseFailed || !strings.Contains(p.Status.Message, want) {
			return fmt.Errorf("status %s %s %s", p.Status.Phase, p.Status.Reason, p.Status.Message)
		}
		return nil
	})
}
