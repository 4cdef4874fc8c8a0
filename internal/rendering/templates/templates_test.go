package templates

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/render"
)

func TestFromConfigMap(t *testing.T) {
	cm := &corev1.ConfigMap{
		Data:       map[string]string{"kustomization.yaml": "resources: []\n", "web.yaml": "kind: X\n"},
		BinaryData: map[string][]byte{"chart.tgz": {0x1f, 0x8b}},
	}
	for _, tc := range []struct {
		name    string
		kind    scorev1b1.TemplateKind
		key     string
		want    render.Template
		wantErr string
	}{
		{name: "manifests text", kind: scorev1b1.TemplateManifests, key: "web.yaml", want: render.Template{Data: []byte("kind: X\n")}},
		{name: "a chart from binaryData", kind: scorev1b1.TemplateHelm, key: "chart.tgz", want: render.Template{Data: []byte{0x1f, 0x8b}}},
		{name: "a kustomization is every key", kind: scorev1b1.TemplateKustomize, want: render.Template{Files: map[string][]byte{"kustomization.yaml": []byte("resources: []\n"), "web.yaml": []byte("kind: X\n"), "chart.tgz": {0x1f, 0x8b}}}},
		{name: "a kustomization names no key", kind: scorev1b1.TemplateKustomize, key: "web.yaml", wantErr: "name no key"},
		{name: "several keys need one named", kind: scorev1b1.TemplateHelm, wantErr: "has 3 keys"},
		{name: "a missing key", kind: scorev1b1.TemplateHelm, key: "other.tgz", wantErr: "no key other.tgz"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FromConfigMap(tc.kind, cm, tc.key)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("want %q, got %v", tc.wantErr, err)
				}
				return
			}
			if err != nil || got.Digest() != tc.want.Digest() {
				t.Fatalf("got %v %v", got, err)
			}
		})
	}
}

func TestTemplatesVerifyAndCacheByKindAndDigest(t *testing.T) {
	chart := func(n int) []byte { return []byte(strings.Repeat("c", n)) }
	objs := []runtime.Object{}
	for _, name := range []string{"a", "b", "c"} {
		objs = append(objs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: name}, BinaryData: map[string][]byte{"chart.tgz": chart(int(name[0]))}})
	}
	reader := fake.NewClientBuilder().WithRuntimeObjects(objs...).Build()
	ref := func(name string) scorev1b1.TemplateRef {
		return scorev1b1.TemplateRef{Kind: scorev1b1.TemplateHelm, Ref: "configmap://t/" + name + "/chart.tgz", Digest: render.Template{Data: chart(int(name[0]))}.Digest()}
	}
	ctx := context.Background()
	// Room for two of the three (97, 98 and 99 bytes).
	tpls := &Source{Reader: reader, MaxBytes: 200}
	for _, name := range []string{"a", "b", "c"} {
		if _, err := tpls.Get(ctx, ref(name)); err != nil {
			t.Fatal(err)
		}
	}
	if len(tpls.cache) != 2 || tpls.bytes != 98+99 {
		t.Fatalf("cache %d entries, %d bytes", len(tpls.cache), tpls.bytes)
	}

	t.Run("a cached digest survives its source", func(t *testing.T) {
		_ = reader.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "c"}})
		if got, err := tpls.Get(ctx, ref("c")); err != nil || len(got.Data) != 99 {
			t.Fatalf("got %d bytes, %v", len(got.Data), err)
		}
	})
	t.Run("the evicted one is fetched again", func(t *testing.T) {
		_ = reader.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "a"}})
		if _, err := tpls.Get(ctx, ref("a")); err == nil {
			t.Fatal("a was evicted and its source is gone: want an error")
		}
	})
	t.Run("the same digest as another kind is not served from the cache", func(t *testing.T) {
		r := ref("b")
		r.Kind = scorev1b1.TemplateManifests
		if _, ok := tpls.cached(string(r.Kind) + "@" + r.Digest); ok {
			t.Fatal("cached across kinds")
		}
	})
	t.Run("bytes that fail the digest are refused", func(t *testing.T) {
		r := ref("b")
		r.Digest = render.Template{Data: []byte("other")}.Digest()
		if _, err := tpls.Get(ctx, r); !errors.Is(err, ErrDigestMismatch) {
			t.Fatalf("got %v", err)
		}
	})
}
