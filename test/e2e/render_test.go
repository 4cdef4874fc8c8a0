package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/offline"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/scorefile"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/inventory"
	"github.com/score-orchestrator/score-orchestrator/internal/provisioners/provisioning"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/render"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/templates"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// assertRenderIsTheCluster renders the named Workloads of ns offline, with what only the
// cluster knows taken from it (UIDs, the instances' stored state, secret values, the pods'
// secrets revision), and checks that every object the controllers applied for them, provisioned
// objects included, is exactly what the render prepared in the fields the controllers' field
// managers own: a server-side apply of the rendered object under the same field manager, run
// as a dry run, changes nothing. It also checks that the render produced no object the
// controllers did not apply, and the other way round.
func assertRenderIsTheCluster(t *testing.T, ns string, names ...string) {
	t.Helper()
	var workloads []*scorev1b1.Workload
	for _, name := range names {
		w := &scorev1b1.Workload{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, w); err != nil {
			t.Fatal(err)
		}
		workloads = append(workloads, w)
	}
	results, err := offline.Run(ctx, offline.Input{Workloads: workloads, Config: devConfig, Cluster: clusterFacts(t),
		Template: func(ref scorev1b1.TemplateRef) (render.Template, error) {
			return templates.FromDir(ctx, ref, filepath.Join(testenv.RepoRoot(), "config", "templates"), nil)
		}})
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range results {
		if len(res.Copies) != 1 {
			t.Fatalf("%s: %d copies rendered, want the one on this cluster", res.Workload.Name, len(res.Copies))
		}
		name, rendered, cp := res.Workload.Name, map[string]bool{}, res.Copies[0]
		check := func(objs []*unstructured.Unstructured, manager string) {
			for _, want := range objs {
				rendered[inventory.Key(inventory.Applied(want, "", ""))] = true
				if diff := dryRunDiff(want, manager); diff != "" {
					t.Errorf("%s: %s %s: the cluster holds other values in %s's fields: %s", name, want.GetKind(), want.GetName(), manager, diff)
				}
			}
		}
		check(cp.Objects, scorev1b1.FieldManagerRuntime)
		for _, cl := range cp.Claims {
			check(cl.Objects, scorev1b1.FieldManagerProvisioner)
		}
		var applied []string
		for _, o := range inventoryOf(t, res.Workload.Namespace, cp) {
			if !rendered[inventory.Key(o)] {
				t.Errorf("%s: the controllers applied %s %s, which the render does not produce", name, o.Kind, o.Name)
			}
			applied = append(applied, inventory.Key(o))
		}
		if len(applied) != len(rendered) {
			t.Errorf("%s: the render produces %d objects, the controllers applied %d: %v", name, len(rendered), len(applied), applied)
		}
	}
}

// dryRunDiff applies want under manager as a dry run and says how the result differs from the
// object as the cluster holds it ("" when it does not).
func dryRunDiff(want *unstructured.Unstructured, manager string) string {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(want.GroupVersionKind())
	if err := c.Get(ctx, client.ObjectKeyFromObject(want), live); err != nil {
		return fmt.Sprintf("not in the cluster: %v", err)
	}
	applied := want.DeepCopy()
	if err := c.Patch(ctx, applied, client.Apply, client.FieldOwner(manager), client.ForceOwnership, client.DryRunAll); err != nil {
		return fmt.Sprintf("the dry run failed: %v", err)
	}
	for _, u := range []*unstructured.Unstructured{live, applied} {
		u.SetManagedFields(nil)
		u.SetResourceVersion("")
		// The status is no manager's apply, and moves on its own between the read and the dry
		// run (a Job completing): compared, it failed the test with equal fields.
		unstructured.RemoveNestedField(u.Object, "status")
	}
	if reflect.DeepEqual(live.Object, applied.Object) {
		return ""
	}
	a, _ := json.Marshal(live.Object)
	b, _ := json.Marshal(applied.Object)
	return fmt.Sprintf("\n  cluster:  %s\n  rendered: %s", a, b)
}

// inventoryOf lists what the controllers applied for a copy of a Workload: its plan's objects and its
// claims' resources, without the earlier runs kept as history (the render has the current run).
func inventoryOf(t *testing.T, namespace string, cp offline.Copy) []scorev1b1.AppliedObject {
	t.Helper()
	p := &scorev1b1.WorkloadPlan{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cp.Plan), p); err != nil {
		t.Fatal(err)
	}
	out := append([]scorev1b1.AppliedObject(nil), p.Status.Objects...)
	for _, cl := range cp.Claims {
		claim := &scorev1b1.ResourceClaim{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: cl.Name}, claim); err != nil {
			t.Fatal(err)
		}
		out = append(out, claim.Status.Resources...)
	}
	kept := out[:0]
	seen := map[string]bool{}
	for _, o := range out {
		if o.Message == "An earlier run, kept as history." || seen[inventory.Key(o)] {
			continue
		}
		seen[inventory.Key(o)] = true
		kept = append(kept, o)
	}
	sort.Slice(kept, func(i, j int) bool { return inventory.Key(kept[i]) < inventory.Key(kept[j]) })
	return kept
}

// clusterFacts reads what only the cluster knows.
func clusterFacts(t *testing.T) offline.Cluster {
	return offline.Cluster{
		PlanUID: func(namespace, name string) types.UID {
			p := &scorev1b1.WorkloadPlan{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, p); err != nil {
				t.Errorf("plan %s/%s: %v", namespace, name, err)
			}
			return p.UID
		},
		State: func(id provisioning.Identity) (map[string]any, map[string]any) {
			return jsonSecret(t, id.Namespace, id.StateSecretName()), jsonSecret(t, id.Namespace, "score-provisioner-shared-state")
		},
		SecretValue: func(w *scorev1b1.Workload, ref scorev1b1.OutputRef) (string, error) {
			p := &scorev1b1.WorkloadPlan{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(w), p); err != nil {
				return "", err
			}
			for _, cl := range p.Spec.Claims {
				if cl.Key == ref.ClaimKey {
					s := &corev1.Secret{}
					if err := c.Get(ctx, client.ObjectKey{Namespace: w.Namespace, Name: cl.SecretName}, s); err != nil {
						return "", err
					}
					return string(s.Data[ref.OutputKey]), nil
				}
			}
			return "", fmt.Errorf("no claim %s", ref.ClaimKey)
		},
		// The revision hashes the outputs Secrets' UIDs and versions: read it off what the
		// runtime applied.
		SecretsRevision: func(w *scorev1b1.Workload) string {
			p := &scorev1b1.WorkloadPlan{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(w), p); err != nil {
				t.Errorf("plan of %s: %v", w.Name, err)
				return ""
			}
			for _, o := range p.Status.Objects {
				u := &unstructured.Unstructured{}
				u.SetAPIVersion(o.APIVersion)
				u.SetKind(o.Kind)
				if err := c.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Name}, u); err == nil {
					if rev := u.GetLabels()[scorev1b1.LabelSecretsRevision]; rev != "" {
						return rev
					}
				}
			}
			return ""
		},
	}
}

// jsonSecret reads a provisioner state Secret (empty when there is none).
func jsonSecret(t *testing.T, namespace, name string) map[string]any {
	s := &corev1.Secret{}
	switch err := c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, s); {
	case apierrors.IsNotFound(err):
		return map[string]any{}
	case err != nil:
		t.Errorf("state %s: %v", name, err)
		return nil
	}
	m := map[string]any{}
	if raw := s.Data["state.json"]; len(raw) > 0 {
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Errorf("state %s: %v", name, err)
		}
	}
	return m
}

// A Workload with three dependencies (postgres, redis and an S3 bucket on MinIO, whose bucket
// Job the provisioner applies too) renders offline exactly as the controllers applied it.
func TestOfflineRenderOfThreeDependencies(t *testing.T) {
	ns := "e2e-render"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	res, err := scorefile.ToWorkload(map[string]any{
		"apiVersion": "score.dev/v1b1",
		"metadata":   map[string]any{"name": "store"},
		"containers": map[string]any{"api": map[string]any{
			"image": "ghcr.io/example/store:1.0",
			"variables": map[string]any{
				"DB_URI":     "${resources.db.uri}",
				"CACHE_HOST": "${resources.cache.host}",
				"BUCKET":     "${resources.media.bucket}",
				"S3_SECRET":  "${resources.media.secret_key}",
			},
			"files": map[string]any{"/etc/store.conf": map[string]any{"content": "endpoint=${resources.media.endpoint}\npassword=${resources.cache.password}\n"}},
		}},
		"service":   map[string]any{"ports": map[string]any{"http": map[string]any{"port": 80, "targetPort": 8080}}},
		"resources": map[string]any{"db": map[string]any{"type": "postgres"}, "cache": map[string]any{"type": "redis"}, "media": map[string]any{"type": "s3"}},
	}, scorefile.Options{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, res.Workload); err != nil {
		t.Fatal(err)
	}
	waitWorkload(t, client.ObjectKeyFromObject(res.Workload), "Ready", nil)
	assertRenderIsTheCluster(t, ns, "store")
}
