package render

import (
	"bytes"
	"encoding/json"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/archive"
)

var updateChart = flag.Bool("update-chart", false, "repackage config/charts/web-service into config/templates/web-service-chart.tgz")

// readDir reads a directory's files by slash-separated relative path, under prefix.
func readDir(t *testing.T, dir, prefix string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b, err := os.ReadFile(p)
		files[prefix+filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// The shipped chart archive is config/charts/web-service packaged by archive.Pack, so its
// digest in the sample config follows from the chart's source.
func TestShippedChartIsPackagedFromItsSource(t *testing.T) {
	want, err := archive.Pack(readDir(t, "../../../config/charts/web-service", "web-service/"))
	if err != nil {
		t.Fatal(err)
	}
	const shipped = "../../../config/templates/web-service-chart.tgz"
	if *updateChart {
		if err := os.WriteFile(shipped, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(shipped)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("%s is not the packaged chart (%v): run go test ./internal/rendering/render -run TestShippedChart -update-chart, then update its digest in config/samples/orchestrator-config.yaml", shipped, err)
	}
}

// sample is one shipped default web-service template of each kind.
func sample(t *testing.T, kind scorev1b1.TemplateKind) Template {
	t.Helper()
	switch kind {
	case scorev1b1.TemplateHelm:
		b, err := os.ReadFile("../../../config/templates/web-service-chart.tgz")
		if err != nil {
			t.Fatal(err)
		}
		return Template{Data: b}
	case scorev1b1.TemplateKustomize:
		return Template{Files: readDir(t, "../../../config/templates/web-service-kustomize", "")}
	default:
		return templateFile(t, "web-service.yaml")
	}
}

func renderKind(t *testing.T, kind scorev1b1.TemplateKind, v string) []*unstructured.Unstructured {
	t.Helper()
	spec := plan(v, mainContainer())
	spec.Template.Kind = kind
	objs, err := Render(Input{Workload: "web", Namespace: "ns", Spec: spec, Template: sample(t, kind)})
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// The three shipped web-service templates give the workload the same pod, replicas and
// Service ports: the plan reaches a chart and a kustomization as fully as a manifests
// template.
func TestEveryKindRendersTheSameWorkload(t *testing.T) {
	want := renderKind(t, scorev1b1.TemplateManifests, values)
	wantDep, wantSvc := byKind(want, "Deployment"), byKind(want, "Service")
	for _, kind := range []scorev1b1.TemplateKind{scorev1b1.TemplateHelm, scorev1b1.TemplateKustomize} {
		t.Run(string(kind), func(t *testing.T) {
			objs := renderKind(t, kind, values)
			var kinds []string
			for _, o := range objs {
				kinds = append(kinds, o.GetKind())
				if o.GetLabels()[scorev1b1.LabelWorkload] != "web" {
					t.Errorf("%s %s lacks the workload label: %v", o.GetKind(), o.GetName(), o.GetLabels())
				}
			}
			sort.Strings(kinds) // the applier orders them for apply
			if strings.Join(kinds, ",") != "ConfigMap,Deployment,Service" {
				t.Fatalf("objects %v", kinds)
			}
			dep, svc := byKind(objs, "Deployment"), byKind(objs, "Service")
			for _, field := range [][]string{{"spec", "template", "spec"}, {"spec", "replicas"}, {"spec", "selector", "matchLabels"}} {
				got, _, _ := unstructured.NestedFieldNoCopy(dep.Object, field...)
				exp, _, _ := unstructured.NestedFieldNoCopy(wantDep.Object, field...)
				if !reflect.DeepEqual(jsonOf(got), jsonOf(exp)) {
					t.Errorf("Deployment %s:\n got %s\nwant %s", strings.Join(field, "."), jsonOf(got), jsonOf(exp))
				}
			}
			gotPorts, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
			wantPorts, _, _ := unstructured.NestedSlice(wantSvc.Object, "spec", "ports")
			if jsonOf(gotPorts) != jsonOf(wantPorts) {
				t.Errorf("Service ports %s, want %s", jsonOf(gotPorts), jsonOf(wantPorts))
			}
			if sel, _, _ := unstructured.NestedStringMap(svc.Object, "spec", "selector"); sel[scorev1b1.LabelWorkload] != "web" {
				t.Errorf("Service selector %v", sel)
			}
		})
	}
}

// jsonOf compares values decoded from YAML (int64) and from JSON (float64) alike.
func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	var norm any
	_ = json.Unmarshal(b, &norm)
	b, _ = json.Marshal(norm)
	return string(b)
}

func TestBackendValueMapping(t *testing.T) {
	t.Run("kustomize names take the workload's prefix, or the plan's", func(t *testing.T) {
		if dep := byKind(renderKind(t, scorev1b1.TemplateKustomize, values), "Deployment"); dep.GetName() != "web-app" || dep.GetNamespace() != "ns" {
			t.Fatalf("name %s/%s", dep.GetNamespace(), dep.GetName())
		}
		v := strings.Replace(values, `"replicas": 2,`, `"replicas": 2, "kustomize": {"namePrefix": "", "nameSuffix": "-v2"},`, 1)
		if dep := byKind(renderKind(t, scorev1b1.TemplateKustomize, v), "Deployment"); dep.GetName() != "app-v2" {
			t.Fatalf("name %s", dep.GetName())
		}
	})
	t.Run("a chart sees the plan's values over its own", func(t *testing.T) {
		v := strings.Replace(values, `"replicas": 2,`, ``, 1)
		if r, _, _ := unstructured.NestedInt64(byKind(renderKind(t, scorev1b1.TemplateHelm, v), "Deployment").Object, "spec", "replicas"); r != 1 {
			t.Fatalf("the chart's default replicas: %d", r)
		}
	})
	t.Run("an unknown kind fails", func(t *testing.T) {
		spec := plan(values, mainContainer())
		spec.Template.Kind = "jsonnet"
		if _, err := Render(Input{Workload: "web", Namespace: "ns", Spec: spec}); err == nil || !strings.Contains(err.Error(), "not a template kind") {
			t.Fatalf("got %v", err)
		}
	})
}

func TestImageOf(t *testing.T) {
	for _, tc := range []struct{ ref, name, tag, digest string }{
		{"nginx", "nginx", "", ""},
		{"nginx:1.27", "nginx", "1.27", ""},
		{"registry.local:5000/team/app:v1@sha256:abc", "registry.local:5000/team/app", "v1", "sha256:abc"},
		{"registry.local:5000/team/app", "registry.local:5000/team/app", "", ""},
	} {
		if got := imageOf("main", tc.ref); got.NewName != tc.name || got.NewTag != tc.tag || got.Digest != tc.digest {
			t.Errorf("%s: %+v", tc.ref, got)
		}
	}
}

// Same plan, same bytes, for every kind.
func TestEveryKindIsDeterministic(t *testing.T) {
	for _, kind := range []scorev1b1.TemplateKind{scorev1b1.TemplateHelm, scorev1b1.TemplateKustomize} {
		t.Run(string(kind), func(t *testing.T) {
			want, _ := json.Marshal(renderKind(t, kind, values))
			for i := range 100 {
				if got, _ := json.Marshal(renderKind(t, kind, values)); !bytes.Equal(got, want) {
					t.Fatalf("render %d differs", i)
				}
			}
		})
	}
}

// The directory digest is the one sha256sum gives, so a platform team can compute it with
// the tools it has.
func TestDirectoryDigestIsSha256sumsListing(t *testing.T) {
	// printf 'a' > a; printf 'bb' > b; LC_ALL=C sha256sum * | sha256sum
	got := Template{Files: map[string][]byte{"b": []byte("bb"), "a": []byte("a")}}.Digest()
	if want := "sha256:f773902206a1f6f79c745f395b0c1bc6bc2330a4c0309fffc7cd49be9377a65f"; got != want {
		t.Fatalf("got %s", got)
	}
	if got == (Template{Data: []byte("a")}).Digest() {
		t.Fatal("a directory and a file must not share a digest")
	}
}
