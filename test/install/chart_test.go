// Package install checks the ways to install the control plane — the Helm chart
// (charts/score-orchestrator) and the kustomize base (config/default) — by rendering them
// with the Helm SDK and kustomize's API, offline: the objects they produce, their security
// settings, and that what they carry has not drifted from the generated files in config/.
package install

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/score-orchestrator/score-orchestrator/internal/cli/devenv"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/controlplane"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
	"github.com/score-orchestrator/score-orchestrator/internal/version"
)

var chartDir = filepath.Join(testenv.RepoRoot(), "charts", "score-orchestrator")

// kubeVersion is the cluster version the chart is rendered and linted for: the one the
// integration tests run (Helm's offline default, v1.20, is below the chart's kubeVersion).
func kubeVersion(t *testing.T) *common.KubeVersion {
	t.Helper()
	v, err := common.ParseKubeVersion("v1.37.1")
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// render installs the chart client-only (helm install --dry-run=client) and returns the
// objects of its manifest.
func render(t *testing.T, namespace string, values map[string]any) []*unstructured.Unstructured {
	t.Helper()
	manifest, err := renderManifest(t, namespace, values)
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, []byte(manifest))
}

func renderManifest(t *testing.T, namespace string, values map[string]any) (string, error) {
	t.Helper()
	chrt, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	install := action.NewInstall(&action.Configuration{})
	install.DryRunStrategy = action.DryRunClient
	install.ReleaseName = "score"
	install.Namespace = namespace
	install.KubeVersion = kubeVersion(t)
	rel, err := install.Run(chrt, values)
	if err != nil {
		return "", err
	}
	r, ok := rel.(*releasev1.Release)
	if !ok {
		t.Fatalf("release of type %T", rel)
	}
	return r.Manifest, nil
}

func decode(t *testing.T, raw []byte) []*unstructured.Unstructured {
	t.Helper()
	objs, err := devenv.DecodeDocuments(raw)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// typed returns the objects of kind as T.
func typed[T any](t *testing.T, objs []*unstructured.Unstructured, kind string) []*T {
	t.Helper()
	var out []*T
	for _, o := range objs {
		if o.GetKind() != kind {
			continue
		}
		v := new(T)
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, v, true); err != nil {
			t.Fatalf("%s %s: %v", kind, o.GetName(), err)
		}
		out = append(out, v)
	}
	return out
}

func readRole(t *testing.T, path string) *rbacv1.ClusterRole {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), path))
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(raw, role); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return role
}

func TestChartLints(t *testing.T) {
	admission := map[string]any{"admissionPolicies": map[string]any{
		"allowedProfiles": map[string]any{"enabled": true},
		"requiredLabels":  map[string]any{"enabled": true},
		"imageRegistries": map[string]any{"enabled": true, "prefixes": []any{"registry.example.org/"}},
	}}
	for name, values := range map[string]map[string]any{"default": nil, "split": {"split": true}, "admission policies": admission,
		"shards": {"split": true, "shards": []any{"blue", "green"}}} {
		t.Run(name, func(t *testing.T) {
			lint := action.NewLint()
			lint.Strict = true
			lint.Namespace = "score-system"
			lint.KubeVersion = kubeVersion(t)
			result := lint.Run([]string{chartDir}, values)
			for _, m := range result.Messages {
				t.Log(m)
			}
			if len(result.Errors) > 0 || result.TotalChartsLinted != 1 {
				t.Fatalf("lint: %v", result.Errors)
			}
		})
	}
}

// The chart runs every controller exactly once — in one Deployment, or in four when split —
// each under a ServiceAccount bound to exactly the generated roles of the controllers it runs,
// non-root on a read-only root file system, with probes on the health port and leader election.
func TestChartRenders(t *testing.T) {
	cases := []struct {
		name        string
		values      map[string]any
		deployments map[string][]string // Deployment (and ServiceAccount) → controllers
	}{
		{"default", nil, map[string][]string{"score-controllers": controlplane.All}},
		{"split", map[string]any{"split": true}, map[string][]string{
			"score-orchestrator": {"orchestrator"}, "score-provisioner": {"provisioner"}, "score-runtime": {"runtime"}, "score-rollout": {"rollout"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs := render(t, "score-system", tc.values)
			deployments := typed[appsv1.Deployment](t, objs, "Deployment")
			if len(deployments) != len(tc.deployments) {
				t.Fatalf("%d Deployments, want %d", len(deployments), len(tc.deployments))
			}
			bound := map[string][]string{} // ServiceAccount → roles
			for _, b := range typed[rbacv1.ClusterRoleBinding](t, objs, "ClusterRoleBinding") {
				for _, s := range b.Subjects {
					if s.Kind != rbacv1.ServiceAccountKind || s.Namespace != "score-system" {
						t.Errorf("binding %s: subject %+v", b.Name, s)
					}
					bound[s.Name] = append(bound[s.Name], b.RoleRef.Name)
				}
			}
			for _, d := range deployments {
				controllers, ok := tc.deployments[d.Name]
				if !ok {
					t.Fatalf("unexpected Deployment %s", d.Name)
				}
				checkDeployment(t, d, controllers)
				var want []string
				for _, c := range controllers {
					want = append(want, "score-"+c)
				}
				got := bound[d.Spec.Template.Spec.ServiceAccountName]
				sort.Strings(got)
				sort.Strings(want)
				if !slices.Equal(got, want) {
					t.Errorf("%s's ServiceAccount is bound to %v, want %v", d.Name, got, want)
				}
			}
			if len(typed[corev1.ServiceAccount](t, objs, "ServiceAccount")) != len(tc.deployments) {
				t.Errorf("one ServiceAccount per Deployment")
			}
			checkRoles(t, objs)
			checkConfig(t, objs, "score-system")
		})
	}

	t.Run("another namespace", func(t *testing.T) {
		checkConfig(t, render(t, "platform", nil), "platform")
	})
	t.Run("own config", func(t *testing.T) {
		doc := "apiVersion: score.dev/v1b1\nkind: OrchestratorConfig\nprofiles: []\n"
		objs := render(t, "score-system", map[string]any{"config": map[string]any{"document": doc}, "templates": map[string]any{"create": false}})
		cms := typed[corev1.ConfigMap](t, objs, "ConfigMap")
		if len(cms) != 1 || cms[0].Data["config.yaml"] != doc {
			t.Fatalf("ConfigMaps %v", cms)
		}
	})
	t.Run("config managed elsewhere, no user roles", func(t *testing.T) {
		objs := render(t, "score-system", map[string]any{"config": map[string]any{"create": false}, "templates": map[string]any{"create": false}, "userRoles": map[string]any{"create": false}})
		if n := len(typed[corev1.ConfigMap](t, objs, "ConfigMap")); n != 0 {
			t.Fatalf("%d ConfigMaps", n)
		}
		if n := len(typed[rbacv1.ClusterRole](t, objs, "ClusterRole")); n != len(controlplane.All) {
			t.Fatalf("%d ClusterRoles, want the controllers' %d", n, len(controlplane.All))
		}
	})
}

func checkDeployment(t *testing.T, d *appsv1.Deployment, controllers []string) {
	t.Helper()
	pod := d.Spec.Template.Spec
	if pod.SecurityContext == nil || pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot ||
		pod.SecurityContext.RunAsUser == nil || *pod.SecurityContext.RunAsUser == 0 {
		t.Errorf("%s: pod security context %+v", d.Name, pod.SecurityContext)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%s: %d containers", d.Name, len(pod.Containers))
	}
	c := pod.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("%s: container security context %+v", d.Name, sc)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("%s: resources %+v", d.Name, c.Resources)
	}
	if !slices.Contains(c.Args, "--controllers="+strings.Join(controllers, ",")) || !slices.Contains(c.Args, "--leader-elect=true") ||
		!slices.Contains(c.Args, "--health-probe-bind-address=:8081") || !slices.Contains(c.Args, "--config-namespace="+d.Namespace) {
		t.Errorf("%s: args %v", d.Name, c.Args)
	}
	var health int32
	for _, p := range c.Ports {
		if p.Name == "health" {
			health = p.ContainerPort
		}
	}
	if health != 8081 {
		t.Errorf("%s: health port %d", d.Name, health)
	}
	for name, probe := range map[string]*corev1.Probe{"/healthz": c.LivenessProbe, "/readyz": c.ReadinessProbe} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != name || probe.HTTPGet.Port.String() != "health" {
			t.Errorf("%s: probe %s: %+v", d.Name, name, probe)
		}
	}
}

// checkRoles compares the chart's ClusterRoles with the generated ones in config/rbac.
func checkRoles(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	roles := map[string]*rbacv1.ClusterRole{}
	for _, r := range typed[rbacv1.ClusterRole](t, objs, "ClusterRole") {
		roles[r.Name] = r
	}
	want := []string{"config/rbac/users/workload-editor.yaml", "config/rbac/users/workload-viewer.yaml"}
	for _, c := range controlplane.All {
		want = append(want, "config/rbac/"+c+"/role.yaml")
	}
	if len(roles) != len(want) {
		t.Errorf("%d ClusterRoles, want %d", len(roles), len(want))
	}
	for _, path := range want {
		generated := readRole(t, path)
		got, ok := roles[generated.Name]
		if !ok {
			t.Errorf("no ClusterRole %s", generated.Name)
			continue
		}
		if !reflect.DeepEqual(got.Rules, generated.Rules) {
			t.Errorf("ClusterRole %s drifted from %s: run make generate\n got %+v\nwant %+v", generated.Name, path, got.Rules, generated.Rules)
		}
		for k, v := range generated.Labels {
			if got.Labels[k] != v {
				t.Errorf("ClusterRole %s: label %s=%q, want %q", got.Name, k, got.Labels[k], v)
			}
		}
	}
}

// checkConfig parses the config the chart ships, as the orchestrator would, and checks its
// template references name the templates ConfigMap the chart installs in namespace.
func checkConfig(t *testing.T, objs []*unstructured.Unstructured, namespace string) {
	t.Helper()
	cms := map[string]*corev1.ConfigMap{}
	for _, cm := range typed[corev1.ConfigMap](t, objs, "ConfigMap") {
		cms[cm.Name] = cm
	}
	doc := cms["orchestrator-config"].Data["config.yaml"]
	cfg, err := orchconfig.Parse([]byte(doc))
	if err != nil {
		t.Fatalf("the shipped config: %v", err)
	}
	if len(cfg.Provisioners) == 0 {
		t.Error("the shipped config lists no provisioners")
	}
	refs := 0
	for _, p := range cfg.Profiles {
		for _, b := range p.Backends {
			ref := b.Template.Ref
			if !strings.HasPrefix(ref, "configmap://") {
				continue
			}
			refs++
			// configmap://NAMESPACE/NAME/KEY, or configmap://NAMESPACE/NAME for a kustomization.
			parts := strings.Split(strings.TrimPrefix(ref, "configmap://"), "/")
			if parts[0] != namespace {
				t.Errorf("backend %s: ref %s is not in %s", b.BackendID, ref, namespace)
				continue
			}
			cm, ok := cms[parts[1]]
			if !ok {
				t.Errorf("backend %s: ref %s: no such ConfigMap", b.BackendID, ref)
				continue
			}
			if len(parts) == 3 {
				if _, ok := cm.Data[parts[2]]; !ok {
					if _, ok := cm.BinaryData[parts[2]]; !ok {
						t.Errorf("backend %s: %s is not in ConfigMap %s", b.BackendID, parts[2], cm.Name)
					}
				}
			}
		}
	}
	if refs == 0 {
		t.Error("no backend uses the shipped templates")
	}
	// The templates are the ConfigMaps make dev installs, content for content.
	want, err := devenv.TemplatesConfigMaps(os.DirFS(testenv.RepoRoot()))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range want {
		w := o.(*corev1.ConfigMap)
		got, ok := cms[w.Name]
		if !ok {
			t.Errorf("no ConfigMap %s: run make generate", w.Name)
			continue
		}
		if !reflect.DeepEqual(got.Data, w.Data) || !reflect.DeepEqual(got.BinaryData, w.BinaryData) {
			t.Errorf("ConfigMap %s drifted from config/templates: run make generate", w.Name)
		}
	}
}

// The chart's crds/ are the generated CRDs, byte for byte.
func TestChartCRDs(t *testing.T) {
	chrt, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	crds := chrt.CRDObjects()
	generated, err := filepath.Glob(filepath.Join(testenv.RepoRoot(), "config", "crd", "bases", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(crds) != len(generated) {
		t.Fatalf("the chart has %d CRDs, config/crd/bases %d: run make generate", len(crds), len(generated))
	}
	for _, f := range generated {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(crds, func(c chartv2.CRD) bool { return c.Name == "crds/"+filepath.Base(f) })
		if i < 0 || !bytes.Equal(crds[i].File.Data, raw) {
			t.Errorf("crds/%s drifted from %s: run make generate", filepath.Base(f), f)
		}
	}
}

// The chart's and the kustomize base's config is the one make dev installs: the sample
// profiles and the development provisioner catalog.
func TestChartConfigIsTheDevelopmentConfig(t *testing.T) {
	want, err := orchconfig.DevelopmentConfig(os.DirFS(testenv.RepoRoot()))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(chartDir, "files", "orchestrator-config.yaml"), filepath.Join(testenv.RepoRoot(), "config", "default", "orchestrator-config.yaml")} {
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s drifted from config/samples and config/provisioners: run make generate", path)
		}
	}
}

// Two replicas of each controller (failover, docs/operations.md): each Deployment has a
// PodDisruptionBudget letting one replica go at a time and prefers its replicas on different
// nodes; one replica has neither; an affinity of one's own replaces the preference.
func TestChartReplicas(t *testing.T) {
	for _, tc := range []struct {
		name     string
		values   map[string]any
		pdbs     int
		affinity string
	}{
		{"one replica", map[string]any{"split": true}, 0, ""},
		{"two replicas", map[string]any{"split": true, "replicas": 2}, 4, "kubernetes.io/hostname"},
		{"own affinity", map[string]any{"replicas": 2, "affinity": map[string]any{"podAntiAffinity": map[string]any{
			"requiredDuringSchedulingIgnoredDuringExecution": []any{map[string]any{"topologyKey": "topology.kubernetes.io/zone",
				"labelSelector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/name": "score-orchestrator"}}}}}}}, 1, "topology.kubernetes.io/zone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := render(t, "score-system", tc.values)
			pdbs := typed[policyv1.PodDisruptionBudget](t, objs, "PodDisruptionBudget")
			if len(pdbs) != tc.pdbs {
				t.Fatalf("%d PodDisruptionBudgets, want %d", len(pdbs), tc.pdbs)
			}
			deployments := map[string]*appsv1.Deployment{}
			for _, d := range typed[appsv1.Deployment](t, objs, "Deployment") {
				deployments[d.Name] = d
				topology := ""
				if a := d.Spec.Template.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
					for _, term := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
						topology = term.PodAffinityTerm.TopologyKey
					}
					for _, term := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
						topology = term.TopologyKey
					}
				}
				if topology != tc.affinity {
					t.Errorf("%s: anti-affinity over %q, want %q", d.Name, topology, tc.affinity)
				}
			}
			for _, p := range pdbs {
				d, ok := deployments[p.Name]
				if !ok || p.Spec.MaxUnavailable.IntValue() != 1 || !reflect.DeepEqual(p.Spec.Selector, d.Spec.Selector) {
					t.Errorf("PodDisruptionBudget %s: %+v, not one replica at a time of its Deployment", p.Name, p.Spec)
				}
			}
		})
	}
}

// Shards: each Deployment of a shard's controllers runs again per shard, owning the Workloads
// labelled with it, under the same ServiceAccount (no binding twice); the first Deployments own
// the unlabelled rest; the fleet's rollout runs once, for every shard, with no selector; each
// shard's replicas get their own PodDisruptionBudget.
func TestChartShards(t *testing.T) {
	objs := render(t, "score-system", map[string]any{"split": true, "replicas": 2, "shards": []any{"blue", "green"}})
	want := map[string]string{"score-rollout": ""} // Deployment → selector
	for _, d := range []string{"score-orchestrator", "score-provisioner", "score-runtime"} {
		want[d] = "!score.dev/shard"
		want[d+"-blue"] = "score.dev/shard=blue"
		want[d+"-green"] = "score.dev/shard=green"
	}
	deployments := typed[appsv1.Deployment](t, objs, "Deployment")
	if len(deployments) != len(want) {
		t.Fatalf("%d Deployments, want %d", len(deployments), len(want))
	}
	for _, d := range deployments {
		selector, ok := want[d.Name]
		if !ok {
			t.Fatalf("unexpected Deployment %s", d.Name)
		}
		controller := strings.Split(strings.TrimPrefix(d.Name, "score-"), "-")[0]
		checkDeployment(t, d, []string{controller})
		args := d.Spec.Template.Spec.Containers[0].Args
		if selector != "" && !slices.Contains(args, "--watch-label-selector="+selector) {
			t.Errorf("%s: args %v, want the selector %s", d.Name, args, selector)
		}
		if selector == "" && slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--watch-label-selector") }) {
			t.Errorf("%s: args %v, want no selector: the rollout is the fleet's", d.Name, args)
		}
		if sa := d.Spec.Template.Spec.ServiceAccountName; sa != "score-"+controller {
			t.Errorf("%s runs as %s", d.Name, sa)
		}
	}
	if n := len(typed[corev1.ServiceAccount](t, objs, "ServiceAccount")); n != len(controlplane.All) {
		t.Errorf("%d ServiceAccounts, want one per controller", n)
	}
	if n := len(typed[rbacv1.ClusterRoleBinding](t, objs, "ClusterRoleBinding")); n != len(controlplane.All) {
		t.Errorf("%d ClusterRoleBindings, want one per controller", n)
	}
	if n := len(typed[policyv1.PodDisruptionBudget](t, objs, "PodDisruptionBudget")); n != len(want) {
		t.Errorf("%d PodDisruptionBudgets, want one per Deployment", n)
	}
	// Without split, the shards' Deployments run the shard's three, the first all four.
	for _, d := range typed[appsv1.Deployment](t, render(t, "score-system", map[string]any{"shards": []any{"blue"}}), "Deployment") {
		want := controlplane.All
		if d.Name == "score-controllers-blue" {
			want = controlplane.Sharded
		}
		checkDeployment(t, d, want)
	}
}

// The image: the chart's appVersion by default (the version the binaries report), a tag of
// one's own, or pinned by digest (make images prints it), which takes the place of the tag.
func TestChartImage(t *testing.T) {
	const digest = "sha256:1c9578a4b6b73af5cb375bf52bc239b7bde5d1035fb149a8be3514a8ebc44464"
	for _, tc := range []struct {
		image map[string]any
		want  string
	}{
		{nil, "score-orchestrator/score-controllers:" + version.Version},
		{map[string]any{"repository": "registry.example.com/platform/score-controllers", "tag": "9.8.7"}, "registry.example.com/platform/score-controllers:9.8.7"},
		{map[string]any{"repository": "registry.example.com/platform/score-controllers", "tag": "9.8.7", "digest": digest}, "registry.example.com/platform/score-controllers@" + digest},
	} {
		var values map[string]any
		if tc.image != nil {
			values = map[string]any{"image": tc.image}
		}
		for _, d := range typed[appsv1.Deployment](t, render(t, "score-system", values), "Deployment") {
			if got := d.Spec.Template.Spec.Containers[0].Image; got != tc.want {
				t.Errorf("image values %v: %s runs %s, want %s", tc.image, d.Name, got, tc.want)
			}
		}
	}
}

// The config from a private registry: the ConfigMap holds the reference (ociRef, loaded live)
// in place of the document, the controllers are given the pull secret, and may read that
// Secret and no other.
func TestChartPrivateRegistry(t *testing.T) {
	const ref = "registry.example.com/platform/orchestrator-config@sha256:1c9578a4b6b73af5cb375bf52bc239b7bde5d1035fb149a8be3514a8ebc44464"
	objs := render(t, "score-system", map[string]any{"split": true, "config": map[string]any{"ociRef": ref}, "oci": map[string]any{"pullSecret": "registry-pull"}})
	for _, cm := range typed[corev1.ConfigMap](t, objs, "ConfigMap") {
		if cm.Name == "orchestrator-config" && (cm.Data["ociRef"] != ref || len(cm.Data) != 1) {
			t.Errorf("the config ConfigMap holds %v, want the reference alone", cm.Data)
		}
	}
	accounts := map[string]bool{}
	for _, d := range typed[appsv1.Deployment](t, objs, "Deployment") {
		accounts[d.Spec.Template.Spec.ServiceAccountName] = true
		if !slices.Contains(d.Spec.Template.Spec.Containers[0].Args, "--oci-pull-secret=registry-pull") {
			t.Errorf("%s: args %v", d.Name, d.Spec.Template.Spec.Containers[0].Args)
		}
	}
	var role *rbacv1.Role
	for _, r := range typed[rbacv1.Role](t, objs, "Role") {
		if r.Name == "score-oci-pull-secret" {
			role = r
		}
	}
	if role == nil || len(role.Rules) != 1 || !slices.Equal(role.Rules[0].ResourceNames, []string{"registry-pull"}) || !slices.Equal(role.Rules[0].Verbs, []string{"get"}) {
		t.Fatalf("the pull secret's Role: %+v", role)
	}
	for _, b := range typed[rbacv1.RoleBinding](t, objs, "RoleBinding") {
		if b.Name != "score-oci-pull-secret" {
			continue
		}
		for _, s := range b.Subjects {
			delete(accounts, s.Name)
		}
	}
	if len(accounts) != 0 {
		t.Errorf("service accounts not bound to the pull secret's Role: %v", accounts)
	}
}
