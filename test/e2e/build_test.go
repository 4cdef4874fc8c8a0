package e2e

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// A container with image "." gets its image from the development catalog's image
// provisioner, a runnable: every revision stamps a new build Job, the Workload rolls out the
// image read from the Job that completed, the last three builds are kept, and going back to
// a revision already built reuses its build instead of running it again.
func TestImageBuiltByARunnable(t *testing.T) {
	ns := "e2e-build"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKey{Namespace: ns, Name: "shop"}
	w := &scorev1b1.Workload{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"},
		Spec: scorev1b1.WorkloadSpec{
			Containers: map[string]scorev1b1.Container{"web": {Image: "."}},
			Service:    &scorev1b1.Service{Ports: map[string]scorev1b1.ServicePort{"http": {Port: 80, TargetPort: ptr.To(int32(8080))}}},
			Resources:  map[string]scorev1b1.Resource{"image": {Type: "image", Params: jsonObject(`{"context":"https://git.example.com/shop.git","revision":"v1"}`)}},
		},
	}
	if err := c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	// deployed waits until the Deployment runs the image the build of revision published.
	deployed := func(revision string) string {
		t.Helper()
		var image string
		waitWorkload(t, key, "built and deployed at "+revision, func(*scorev1b1.Workload) error {
			job, err := completedBuild(ns, revision)
			if err != nil {
				return err
			}
			image = job.Annotations["score.dev/image"]
			dep := &appsv1.Deployment{}
			if err := c.Get(ctx, key, dep); err != nil {
				return err
			}
			if got := dep.Spec.Template.Spec.Containers[0].Image; got != image || dep.Status.UpdatedReplicas != 1 || dep.Status.AvailableReplicas != 1 {
				return fmt.Errorf("deployment runs %s (updated %d, available %d), the build published %s", got, dep.Status.UpdatedReplicas, dep.Status.AvailableReplicas, image)
			}
			return nil
		})
		return image
	}
	revise := func(revision string) {
		update(t, key, func(w *scorev1b1.Workload) {
			r := w.Spec.Resources["image"]
			r.Params = jsonObject(`{"context":"https://git.example.com/shop.git","revision":"` + revision + `"}`)
			w.Spec.Resources["image"] = r
		})
	}

	v1 := deployed("v1")
	if !strings.HasPrefix(v1, "registry.score.test/"+ns+"/shop:") {
		t.Fatalf("image %s", v1)
	}
	revise("v2")
	if v2 := deployed("v2"); v2 == v1 {
		t.Fatalf("a new revision must give a new image: %s", v2)
	}
	revise("v3")
	v3 := deployed("v3")
	revise("v4")
	deployed("v4")
	if got := buildRevisions(t, ns); got != "v2,v3,v4" {
		t.Fatalf("the last three builds are kept, the oldest collected: %s", got)
	}

	v3Job, err := completedBuild(ns, "v3")
	if err != nil {
		t.Fatal(err)
	}
	revise("v3")
	if again := deployed("v3"); again != v3 {
		t.Fatalf("going back to v3 deploys its image %s, got %s", v3, again)
	}
	rerun, err := completedBuild(ns, "v3")
	if err != nil || rerun.UID != v3Job.UID {
		t.Fatalf("going back to a built revision reuses its build, not a new run: %v", err)
	}
}

func completedBuild(ns, revision string) (*batchv1.Job, error) {
	var jobs batchv1.JobList
	if err := c.List(ctx, &jobs, client.InNamespace(ns), client.HasLabels{scorev1b1.LabelRunOf}); err != nil {
		return nil, err
	}
	for i, j := range jobs.Items {
		if j.Annotations["score.dev/revision"] != revision {
			continue
		}
		for _, cond := range j.Status.Conditions {
			if cond.Type == batchv1.JobComplete && cond.Status == corev1.ConditionTrue {
				return &jobs.Items[i], nil
			}
		}
		return nil, fmt.Errorf("the build of %s has not completed", revision)
	}
	return nil, fmt.Errorf("no build of %s", revision)
}

func buildRevisions(t *testing.T, ns string) string {
	t.Helper()
	var jobs batchv1.JobList
	if err := c.List(ctx, &jobs, client.InNamespace(ns), client.HasLabels{scorev1b1.LabelRunOf}); err != nil {
		t.Fatal(err)
	}
	var revs []string
	for _, j := range jobs.Items {
		if j.DeletionTimestamp == nil {
			revs = append(revs, j.Annotations["score.dev/revision"])
		}
	}
	sort.Strings(revs)
	return strings.Join(revs, ",")
}
