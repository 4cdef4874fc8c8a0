package e2e

import (
	"fmt"
	"sort"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// waitWorkload waits until the Workload is Ready for its current generation and check
// passes on it, and returns it.
func waitWorkload(t *testing.T, key client.ObjectKey, what string, check func(*scorev1b1.Workload) error) *scorev1b1.Workload {
	t.Helper()
	w := &scorev1b1.Workload{}
	testenv.Eventually(t, 2*time.Minute, key.Name+" "+what, func() error {
		if err := c.Get(ctx, key, w); err != nil {
			return err
		}
		r := meta.FindStatusCondition(w.Status.Conditions, scorev1b1.ConditionReady)
		if r == nil || r.Status != metav1.ConditionTrue || r.ObservedGeneration != w.Generation {
			return fmt.Errorf("ready %+v at generation %d", r, w.Generation)
		}
		if check != nil {
			return check(w)
		}
		return nil
	})
	return w
}

// update reads the Workload, changes it and writes it back.
func update(t *testing.T, key client.ObjectKey, change func(*scorev1b1.Workload)) {
	t.Helper()
	w := &scorev1b1.Workload{}
	if err := c.Get(ctx, key, w); err != nil {
		t.Fatal(err)
	}
	change(w)
	if err := c.Update(ctx, w); err != nil {
		t.Fatal(err)
	}
}

// Day two of a web service on the simulated cluster, where the real controller-manager rolls
// Deployments out: an update rolls out and its dropped port leaves the Service; dropping the
// service prunes the Service and the endpoint; a deleted Deployment comes back.
func TestWebServiceDayTwo(t *testing.T) {
	ns := "e2e-day2"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKey{Namespace: ns, Name: "api"}
	w := &scorev1b1.Workload{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"},
		Spec: scorev1b1.WorkloadSpec{
			Containers: map[string]scorev1b1.Container{"main": {Image: "nginx:1.27"}},
			Service: &scorev1b1.Service{Ports: map[string]scorev1b1.ServicePort{
				"http":    {Port: 80, TargetPort: ptr.To(int32(8080))},
				"metrics": {Port: 9090},
			}},
		},
	}
	if err := c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	waitWorkload(t, key, "Ready with its endpoint", func(w *scorev1b1.Workload) error {
		if w.Status.Endpoint == nil || *w.Status.Endpoint != "http://api."+ns+".svc.cluster.local:80" {
			return fmt.Errorf("endpoint %s", ptr.Deref(w.Status.Endpoint, "<none>"))
		}
		return nil
	})

	t.Run("an update rolls out and drops the removed port", func(t *testing.T) {
		update(t, key, func(w *scorev1b1.Workload) {
			w.Spec.Containers["main"] = scorev1b1.Container{Image: "nginx:1.28"}
			delete(w.Spec.Service.Ports, "metrics")
		})
		waitWorkload(t, key, "rolled out", func(*scorev1b1.Workload) error {
			dep := &appsv1.Deployment{}
			if err := c.Get(ctx, key, dep); err != nil {
				return err
			}
			if img := dep.Spec.Template.Spec.Containers[0].Image; img != "nginx:1.28" {
				return fmt.Errorf("image %s", img)
			}
			if dep.Status.ObservedGeneration != dep.Generation || dep.Status.UpdatedReplicas != ptr.Deref(dep.Spec.Replicas, 1) || dep.Status.AvailableReplicas != dep.Status.UpdatedReplicas {
				return fmt.Errorf("rollout %+v", dep.Status)
			}
			svc := &corev1.Service{}
			if err := c.Get(ctx, key, svc); err != nil {
				return err
			}
			if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "http" {
				return fmt.Errorf("service ports %+v", svc.Spec.Ports)
			}
			return nil
		})
	})

	t.Run("dropping the service prunes the Service and the endpoint", func(t *testing.T) {
		update(t, key, func(w *scorev1b1.Workload) { w.Spec.Service = nil })
		waitWorkload(t, key, "without a Service", func(w *scorev1b1.Workload) error {
			if err := c.Get(ctx, key, &corev1.Service{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("the Service is still there: %v", err)
			}
			if w.Status.Endpoint != nil {
				return fmt.Errorf("endpoint %s", *w.Status.Endpoint)
			}
			return nil
		})
	})

	t.Run("a deleted Deployment is recreated", func(t *testing.T) {
		dep := &appsv1.Deployment{}
		if err := c.Get(ctx, key, dep); err != nil {
			t.Fatal(err)
		}
		if err := c.Delete(ctx, dep); err != nil {
			t.Fatal(err)
		}
		waitWorkload(t, key, "Ready on a new Deployment", func(*scorev1b1.Workload) error {
			again := &appsv1.Deployment{}
			if err := c.Get(ctx, key, again); err != nil {
				return err
			}
			if again.UID == dep.UID || again.Status.AvailableReplicas < 1 {
				return fmt.Errorf("uid %s, available %d", again.UID, again.Status.AvailableReplicas)
			}
			return nil
		})
	})

	t.Run("an object of someone else is never taken over", func(t *testing.T) {
		taken := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taken"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 1234}}}}
		if err := c.Create(ctx, taken); err != nil {
			t.Fatal(err)
		}
		w := &scorev1b1.Workload{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taken"},
			Spec: scorev1b1.WorkloadSpec{
				Containers: map[string]scorev1b1.Container{"main": {Image: "nginx:1.27"}},
				Service:    &scorev1b1.Service{Ports: map[string]scorev1b1.ServicePort{"http": {Port: 80}}},
			},
		}
		if err := c.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, time.Minute, "refused", func() error {
			if err := c.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil {
				return err
			}
			r := meta.FindStatusCondition(w.Status.Conditions, scorev1b1.ConditionReady)
			if r == nil || r.Status != metav1.ConditionFalse || r.Reason != string(scorev1b1.ReasonPermissionDenied) {
				return fmt.Errorf("ready %+v", r)
			}
			return nil
		})
		svc := &corev1.Service{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(taken), svc); err != nil {
			t.Fatal(err)
		}
		if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 1234 || len(svc.OwnerReferences) != 0 {
			t.Fatalf("the foreign Service was changed: %+v %v", svc.Spec.Ports, svc.OwnerReferences)
		}
	})
}

// A batch job runs once per input change: a new Job (named by the hash of the run's inputs)
// runs to completion on the simulated cluster for every change, an unchanged input runs no
// new one, and the last three runs are kept as history.
func TestBatchJobRunsPerInputChange(t *testing.T) {
	ns := "e2e-batch"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKey{Namespace: ns, Name: "report"}
	w := &scorev1b1.Workload{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "report", Annotations: map[string]string{scorev1b1.AnnotationProfile: "batch-job"}},
		Spec:       scorev1b1.WorkloadSpec{Containers: map[string]scorev1b1.Container{"main": {Image: "busybox:1.37", Variables: map[string]string{"RUN": "1"}}}},
	}
	if err := c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	// latest waits until the newest Job is complete and there are want Jobs, and names it.
	latest := func(what string, want int) string {
		t.Helper()
		var name string
		waitWorkload(t, key, what, func(*scorev1b1.Workload) error {
			var jobs batchv1.JobList
			if err := c.List(ctx, &jobs, client.InNamespace(ns), client.MatchingLabels{scorev1b1.LabelWorkload: "report"}); err != nil {
				return err
			}
			var live []batchv1.Job
			for _, j := range jobs.Items {
				if j.DeletionTimestamp == nil {
					live = append(live, j)
				}
			}
			if len(live) != want {
				return fmt.Errorf("%d jobs, want %d", len(live), want)
			}
			sort.Slice(live, func(i, j int) bool { return live[j].CreationTimestamp.Before(&live[i].CreationTimestamp) })
			newest := live[0]
			for _, cond := range newest.Status.Conditions {
				if cond.Type == batchv1.JobComplete && cond.Status == corev1.ConditionTrue {
					name = newest.Name
					return nil
				}
			}
			return fmt.Errorf("job %s not complete: %+v", newest.Name, newest.Status)
		})
		return name
	}
	first := latest("the first run complete", 1)
	run := func(n string) {
		update(t, key, func(w *scorev1b1.Workload) { w.Spec.Containers["main"].Variables["RUN"] = n })
	}
	run("2")
	if second := latest("a second run complete, the first kept", 2); second == first {
		t.Fatalf("still the first job %s", first)
	}
	run("3")
	latest("a third run", 3)
	run("4")
	fourth := latest("a fourth run, the oldest collected", 3)
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: first}, &batchv1.Job{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the first run is beyond the history: %v", err)
	}

	update(t, key, func(w *scorev1b1.Workload) { w.Labels = map[string]string{"team": "reports"} })
	if name := latest("relabelled", 3); name != fourth {
		t.Fatalf("a label change must not run a new job: %s", name)
	}
}
