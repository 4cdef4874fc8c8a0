package runtimes

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// kubernetesRuntime sees a container through its Deployment's pod template, resolved as the
// kubelet resolves it (a secretKeyRef read from its Secret, a file from its ConfigMap or
// Secret): on simulated nodes no container runs. What runs a Workload is its ReplicaSets that
// have replicas.
func kubernetesRuntime() runtimeUnderTest {
	return runtimeUnderTest{
		name:         "kubernetes",
		namespaces:   [2]string{kubeShop, kubeOther},
		precondition: func(*testing.T) {},
		env: func(t *testing.T, w *scorev1b1.Workload, name string) string {
			c, _ := podOf(t, w)
			for _, e := range c.Env {
				switch {
				case e.Name != name:
				case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
					return secretData(t, w.Namespace, e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key)
				default:
					return e.Value
				}
			}
			t.Fatalf("no variable %s in %+v", name, c.Env)
			return ""
		},
		file: func(t *testing.T, w *scorev1b1.Workload, path string) string {
			c, pod := podOf(t, w)
			for _, m := range c.VolumeMounts {
				if m.MountPath != path {
					continue
				}
				for _, v := range pod.Volumes {
					switch {
					case v.Name != m.Name:
					case v.ConfigMap != nil:
						cm := &corev1.ConfigMap{}
						if err := hub.Get(ctx, client.ObjectKey{Namespace: w.Namespace, Name: v.ConfigMap.Name}, cm); err != nil {
							t.Fatal(err)
						}
						return cm.Data[m.SubPath]
					case v.Secret != nil:
						return secretData(t, w.Namespace, v.Secret.SecretName, m.SubPath)
					}
				}
			}
			t.Fatalf("no file %s in %+v", path, c.VolumeMounts)
			return ""
		},
		endpoint: func(t *testing.T, endpoint string) {
			if !strings.Contains(endpoint, "://") {
				t.Errorf("endpoint %q", endpoint)
			}
		},
		units: func(t *testing.T, ns, name string) []string {
			sets := &appsv1.ReplicaSetList{}
			if err := hub.List(ctx, sets, client.InNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, rs := range sets.Items {
				owner := ""
				for _, o := range rs.OwnerReferences {
					owner = o.Name
				}
				if owner == name && rs.Spec.Replicas != nil && *rs.Spec.Replicas > 0 {
					out = append(out, rs.Name)
				}
			}
			slices.Sort(out)
			return out
		},
		restart: func(t *testing.T) {
			restart(t, &stopControllers, startControllers)
		},
		// The runtime's watch of plans is not filtered: its queue holds every plan.
		controller: "workloadplan",
		served: func(t *testing.T) int {
			plans := &scorev1b1.WorkloadPlanList{}
			if err := hub.List(ctx, plans); err != nil {
				t.Fatal(err)
			}
			return len(plans.Items)
		},
		cannot: map[string]string{
			caseBrokenImage: "a simulated node runs any image (kwok), so no image is ever missing",
			caseCrash:       "a simulated node runs no process (kwok), so none exits",
		},
	}
}

// podOf is the Workload's Deployment's pod template and its container "main".
func podOf(t *testing.T, w *scorev1b1.Workload) (corev1.Container, corev1.PodSpec) {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := hub.Get(ctx, client.ObjectKeyFromObject(w), d); err != nil {
		t.Fatal(err)
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "main" {
			return c, d.Spec.Template.Spec
		}
	}
	t.Fatal(fmt.Errorf("no container main in Deployment %s", w.Name))
	return corev1.Container{}, corev1.PodSpec{}
}

func secretData(t *testing.T, ns, name, key string) string {
	t.Helper()
	s := &corev1.Secret{}
	if err := hub.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
		t.Fatal(err)
	}
	return string(s.Data[key])
}
