package runtime

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	oras "oras.land/oras-go/v2"
	"oras.land/oras-go/v2/registry/remote"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/archive"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/render"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/templates"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// The test templates make a ConfigMap and a Service, which are healthy as soon as they
// exist, so plans reach Projected without a controller-manager. Each carries the plan's data
// so the test sees that it arrived.

// testChart is a chart whose ConfigMap holds the workload's image and replicas from the
// plan's values, and whose Service publishes the workload's ports.
func testChart(t *testing.T) []byte {
	t.Helper()
	b, err := archive.Pack(map[string][]byte{
		"web/Chart.yaml":  []byte("apiVersion: v2\nname: web\nversion: 0.1.0\n"),
		"web/values.yaml": []byte("greeting: hello\n"),
		"web/templates/settings.yaml": []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-settings
  labels: {{- toYaml .Values.score.labels | nindent 4 }}
data:
  greeting: {{ .Values.greeting | quote }}
  image: {{ (index .Values.score.podSpec.containers 0).image | quote }}
`),
		"web/templates/service.yaml": []byte(`apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}
spec:
  selector: {{- toYaml .Values.score.selector | nindent 4 }}
  ports:
  {{- range .Values.score.ports }}
    - {name: {{ .name }}, port: {{ .port }}, targetPort: {{ .targetPort }}}
  {{- end }}
`),
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// testKustomization is a kustomization whose ConfigMap is generated from the plan's values
// and whose Service takes the workload's ports by a replacement.
func testKustomization() map[string][]byte {
	return map[string][]byte{
		"kustomization.yaml": []byte(`resources: [service.yaml, score-values.yaml]
configMapGenerator:
  - name: settings
    envs: [score-values.env]
replacements:
  - source: {kind: ScoreValues, name: score-values, fieldPath: workload.ports}
    targets:
      - select: {kind: Service}
        fieldPaths: [spec.ports]
`),
		"service.yaml": []byte("apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports: []\n"),
	}
}

// pushLayer publishes an artifact with one layer to the in-process registry and returns
// its ref pinned by digest.
func pushLayer(t *testing.T, host, repoName, mediaType string, data []byte) (string, string) {
	t.Helper()
	repo, err := remote.NewRepository(host + "/" + repoName)
	if err != nil {
		t.Fatal(err)
	}
	repo.PlainHTTP = true
	layer, err := oras.PushBytes(ctx, repo, mediaType, data)
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := oras.PackManifest(ctx, repo, oras.PackManifestVersion1_1, "application/vnd.score.dev.test.v1", oras.PackManifestOptions{Layers: []ocispec.Descriptor{layer}})
	if err != nil {
		t.Fatal(err)
	}
	return "oci://" + host + "/" + repoName + "@" + manifest.Digest.String(), manifest.Digest.String()
}

func TestHelmAndKustomizeBackends(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	chart := testChart(t)
	kust := testKustomization()
	kustArchive, err := archive.Pack(kust)
	if err != nil {
		t.Fatal(err)
	}
	helmOCI, helmOCIDigest := pushLayer(t, host, "charts/web", templates.HelmChartLayerMediaType, chart)
	// A registry that refuses anonymous pulls, and the runtime's pull secret for it.
	private := testenv.StartRegistry(t, "platform", "chart-pull-password")
	helmPrivate := "oci://" + private.Push(t, "charts/web", "application/vnd.score.dev.test.v1", templates.HelmChartLayerMediaType, chart)
	_, helmPrivateDigest, _ := strings.Cut(helmPrivate, "@")
	testenv.Create(t, env.Client, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: pullSecret.Namespace, Name: pullSecret.Name}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: private.DockerConfig("platform", "chart-pull-password")}})
	kustOCI, kustOCIDigest := pushLayer(t, host, "kustomize/web", templates.KustomizationLayerMediaType, kustArchive)

	for _, tc := range []struct {
		name, kind, ref, digest string
		// settings and service are the names the template gives its objects.
		settings, service string
		wantData          map[string]string
	}{
		{name: "helm from a ConfigMap", kind: "helm", ref: "configmap://%s/charts/chart.tgz", digest: testenv.Digest(chart), settings: "web-settings", service: "web",
			wantData: map[string]string{"greeting": "hello", "image": "nginx"}},
		{name: "helm from an OCI registry", kind: "helm", ref: helmOCI, digest: helmOCIDigest, settings: "web-settings", service: "web",
			wantData: map[string]string{"greeting": "hello", "image": "nginx"}},
		{name: "helm from a registry that refuses anonymous pulls", kind: "helm", ref: helmPrivate, digest: helmPrivateDigest, settings: "web-settings", service: "web",
			wantData: map[string]string{"greeting": "hello", "image": "nginx"}},
		{name: "kustomize from a ConfigMap", kind: "kustomize", ref: "configmap://%s/kustomization", digest: render.Template{Files: kust}.Digest(), settings: "web-settings-", service: "web-web",
			wantData: map[string]string{"containers.main.image": "nginx", "service.ports.http.port": "80"}},
		{name: "kustomize from an OCI registry", kind: "kustomize", ref: kustOCI, digest: kustOCIDigest, settings: "web-settings-", service: "web-web",
			wantData: map[string]string{"containers.main.image": "nginx"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := setup(t, "unused")
			testenv.Create(t, env.Client,
				&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "charts"}, BinaryData: map[string][]byte{"chart.tgz": chart}},
				&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kustomization"}, Data: bytesToStrings(kust)},
			)
			p := newPlan(ns, "web", "u-"+tc.kind, tc.digest, webValues)
			p.Spec.Template = scorev1b1.TemplateRef{Kind: scorev1b1.TemplateKind(tc.kind), Ref: strings.Replace(tc.ref, "%s", ns, 1), Digest: tc.digest}
			testenv.Create(t, env.Client, p)
			testenv.Eventually(t, 20*time.Second, "projected", func() error {
				if err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
					return err
				}
				if p.Status.Phase != scorev1b1.PlanPhaseProjected || len(p.Status.Objects) != 2 {
					return fmt.Errorf("status %s %s %+v", p.Status.Phase, p.Status.Message, p.Status.Objects)
				}
				return nil
			})
			if c := meta.FindStatusCondition(p.Status.Conditions, scorev1b1.PlanConditionApplied); c == nil || c.Status != metav1.ConditionTrue {
				t.Fatalf("applied condition %+v", c)
			}
			var cms corev1.ConfigMapList
			if err := env.Client.List(ctx, &cms, client.InNamespace(ns), client.MatchingLabels{scorev1b1.LabelWorkload: "web"}); err != nil {
				t.Fatal(err)
			}
			var settings *corev1.ConfigMap
			for i := range cms.Items {
				if strings.HasPrefix(cms.Items[i].Name, tc.settings) {
					settings = &cms.Items[i]
				}
			}
			if settings == nil {
				t.Fatalf("no ConfigMap %s* among %d", tc.settings, len(cms.Items))
			}
			svc := &corev1.Service{}
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: tc.service}, svc); err != nil {
				t.Fatal(err)
			}
			for _, o := range []client.Object{settings, svc} {
				if o.GetAnnotations()[scorev1b1.AnnotationWorkloadUID] != "u-"+tc.kind || !metav1.IsControlledBy(o, p) || o.GetLabels()[scorev1b1.LabelWorkload] != "web" {
					t.Errorf("%s ownership %v %v %v", o.GetName(), o.GetAnnotations(), o.GetLabels(), o.GetOwnerReferences())
				}
			}
			for k, v := range tc.wantData {
				if settings.Data[k] != v {
					t.Errorf("settings %s = %q, want %q (%v)", k, settings.Data[k], v, settings.Data)
				}
			}
			if len(svc.Spec.Ports) != 2 || svc.Spec.Selector[scorev1b1.LabelWorkload] != "web" {
				t.Errorf("service %+v", svc.Spec)
			}
		})
	}

	t.Run("a chart that fails its digest is not applied", func(t *testing.T) {
		ns := setup(t, "unused")
		testenv.Create(t, env.Client, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "charts"}, BinaryData: map[string][]byte{"chart.tgz": chart}})
		p := newPlan(ns, "web", "u-tampered", "", webValues)
		p.Spec.Template = scorev1b1.TemplateRef{Kind: scorev1b1.TemplateHelm, Ref: "configmap://" + ns + "/charts/chart.tgz", Digest: testenv.Digest(append([]byte{}, chart[:len(chart)-1]...))}
		testenv.Create(t, env.Client, p)
		waitPlanFailed(t, p, "does not match its digest")
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &corev1.Service{}); !apierrors.IsNotFound(err) {
			t.Fatalf("nothing may be applied from a chart that fails its digest: %v", err)
		}
	})
}

func bytesToStrings(files map[string][]byte) map[string]string {
	out := map[string]string{}
	for k, v := range files {
		out[k] = string(v)
	}
	return out
}
