package e2e

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/registry/remote"
	"sigs.k8s.io/yaml"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/templates"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// The sample's helm backend (a chart in ConfigMap binaryData) and kustomize backend (a
// kustomization held in a ConfigMap of its own) take a web service to Ready on the simulated
// cluster, with the controllers under their own service accounts, like the manifests one.
func TestHelmAndKustomizeBackends(t *testing.T) {
	ns := "e2e-backends"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	for channel, backend := range map[string]string{"canary": "k8s-web-canary", "kustomize": "k8s-web-kustomize"} {
		w := &scorev1b1.Workload{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "via-" + channel, Labels: map[string]string{"score.dev/channel": channel}},
			Spec: scorev1b1.WorkloadSpec{
				Containers: map[string]scorev1b1.Container{"web": {Image: "nginx:1.27", Variables: map[string]string{"MODE": channel}}},
				Service:    &scorev1b1.Service{Ports: map[string]scorev1b1.ServicePort{"http": {Port: 80, TargetPort: ptr.To(int32(8080))}}},
			},
		}
		if err := c.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		waitWorkload(t, client.ObjectKeyFromObject(w), "Ready on "+backend, func(w *scorev1b1.Workload) error {
			p := &scorev1b1.WorkloadPlan{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(w), p); err != nil {
				return err
			}
			if p.Spec.BackendID != backend || p.Status.Phase != scorev1b1.PlanPhaseProjected {
				return fmt.Errorf("plan on %s, %s", p.Spec.BackendID, p.Status.Phase)
			}
			if w.Status.Endpoint == nil || !strings.HasPrefix(*w.Status.Endpoint, "http://") || !strings.Contains(*w.Status.Endpoint, "."+ns+".svc.cluster.local:80") {
				return fmt.Errorf("endpoint %s", ptr.Deref(w.Status.Endpoint, "<none>"))
			}
			return nil
		})
	}
}

// A backend whose template is an OCI artifact, pinned by digest and served by an in-process
// registry, takes a web service to Ready on the simulated cluster; the config that names it
// is loaded from the ConfigMap at run time, as a platform would roll it out.
func TestTemplateFromOCI(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	text, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "templates", "web-service.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	repo, err := remote.NewRepository(host + "/templates/web-service")
	if err != nil {
		t.Fatal(err)
	}
	repo.PlainHTTP = true
	layer, err := oras.PushBytes(ctx, repo, templates.TemplateLayerMediaType, text)
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := oras.PackManifest(ctx, repo, oras.PackManifestVersion1_1, "application/vnd.score.dev.template.v1", oras.PackManifestOptions{Layers: []ocispec.Descriptor{layer}})
	if err != nil {
		t.Fatal(err)
	}

	// The development config with one more web-service backend, for Workloads labelled
	// score.dev/channel=oci.
	cfg := *devConfig
	cfg.Profiles = append([]orchconfig.Profile(nil), devConfig.Profiles...)
	web := &cfg.Profiles[0]
	web.Backends = append(append([]orchconfig.Backend(nil), web.Backends...), orchconfig.Backend{
		BackendID: "k8s-web-oci", RuntimeClass: "kubernetes", Version: "2.0.0", Priority: 200,
		Template:    orchconfig.Template{Kind: "manifests", Ref: "oci://" + host + "/templates/web-service@" + manifest.Digest.String()},
		Constraints: orchconfig.Constraints{Selectors: []orchconfig.Selector{{MatchLabels: map[string]string{"score.dev/channel": "oci"}}}},
	})
	doc, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	setConfig := func(doc []byte) {
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "score-system", Name: "orchestrator-config"}, cm); err != nil {
			t.Fatal(err)
		}
		cm.Data["config.yaml"] = string(doc)
		if err := c.Update(ctx, cm); err != nil {
			t.Fatal(err)
		}
	}
	original := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "score-system", Name: "orchestrator-config"}, original); err != nil {
		t.Fatal(err)
	}
	setConfig(doc)
	t.Cleanup(func() { setConfig([]byte(original.Data["config.yaml"])) })

	ns := "e2e-oci"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	w := &scorev1b1.Workload{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "from-oci", Labels: map[string]string{"score.dev/channel": "oci"}},
		Spec: scorev1b1.WorkloadSpec{
			Containers: map[string]scorev1b1.Container{"web": {Image: "nginx:1.27"}},
			Service:    &scorev1b1.Service{Ports: map[string]scorev1b1.ServicePort{"http": {Port: 80}}},
		},
	}
	if err := c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	waitWorkload(t, client.ObjectKeyFromObject(w), "Ready from the OCI template", func(w *scorev1b1.Workload) error {
		p := &scorev1b1.WorkloadPlan{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(w), p); err != nil {
			return err
		}
		if p.Spec.BackendID != "k8s-web-oci" || !strings.HasPrefix(p.Spec.Template.Ref, "oci://") {
			return fmt.Errorf("plan on %s from %s", p.Spec.BackendID, p.Spec.Template.Ref)
		}
		if w.Status.Endpoint == nil || *w.Status.Endpoint != "http://from-oci."+ns+".svc.cluster.local:80" {
			return fmt.Errorf("endpoint %s", ptr.Deref(w.Status.Endpoint, "<none>"))
		}
		return nil
	})
}
