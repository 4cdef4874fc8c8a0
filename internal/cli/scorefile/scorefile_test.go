package scorefile

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/conformance"
)

func TestConformanceRoundTrip(t *testing.T) {
	conformance.Require(t)
	files, err := conformance.ScoreFiles()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 80 {
		t.Fatalf("expected the whole corpus, found %d files", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			docs, err := DecodeDocuments(data)
			if err != nil {
				t.Fatal(err)
			}
			for _, doc := range docs {
				res, err := ToWorkload(doc, Options{})
				if err != nil {
					t.Fatalf("converting: %v", err)
				}
				// ToWorkload upgraded doc in place; that upgraded form is what must come back.
				back, err := FromWorkload(res.Workload)
				if err != nil {
					t.Fatal(err)
				}
				if !SameScore(doc, back) {
					wb, _ := json.MarshalIndent(doc, "", " ")
					gb, _ := json.MarshalIndent(back, "", " ")
					t.Fatalf("round trip lost something:\nwant %s\ngot  %s", wb, gb)
				}
			}
		})
	}
}

func convert(t *testing.T, doc string, opts Options) (*Result, error) {
	t.Helper()
	docs, err := DecodeDocuments([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return ToWorkload(docs[0], opts)
}

func TestToWorkload(t *testing.T) {
	const doc = `apiVersion: score.dev/v1b1
metadata:
  name: hello
  annotations:
    score.dev/profile: web-service
  labels:
    team: a
  owner: team-a
containers:
  main:
    image: nginx
    variables:
      DB: ${resources.db.host}
service:
  ports:
    web:
      port: 80
      targetPort: 8080
resources:
  db:
    type: postgres
    params:
      size: small
`
	res, err := convert(t, doc, Options{Namespace: "team-a"})
	if err != nil {
		t.Fatal(err)
	}
	w := res.Workload
	if w.Name != "hello" || w.Namespace != "team-a" || w.Kind != "Workload" || w.APIVersion != "score.dev/v1b1" {
		t.Fatalf("identity: %+v", w.TypeMeta)
	}
	if w.Annotations[scorev1b1.AnnotationProfile] != "web-service" || w.Labels["team"] != "a" {
		t.Fatalf("metadata not carried: %v %v", w.Annotations, w.Labels)
	}
	if w.Annotations[scorev1b1.AnnotationScoreMetadata] != `{"owner":"team-a"}` {
		t.Fatalf("extra metadata: %q", w.Annotations[scorev1b1.AnnotationScoreMetadata])
	}
	if got := *w.Spec.Service.Ports["web"].TargetPort; got != 8080 {
		t.Fatalf("targetPort %d", got)
	}
	if string(w.Spec.Resources["db"].Params.Raw) != `{"size":"small"}` {
		t.Fatalf("params %s", w.Spec.Resources["db"].Params.Raw)
	}
}

// Image replaces "." (the image built for this deployment, score-k8s's --image) and nothing
// else; without it "." stays for the platform's image resource.
func TestImageReplacesDot(t *testing.T) {
	const doc = `apiVersion: score.dev/v1b1
metadata:
  name: ingress
containers:
  built:
    image: .
  sidecar:
    image: envoy:1.30
`
	for _, tc := range []struct{ image, built string }{{"", "."}, {"registry.example/ingress:v2", "registry.example/ingress:v2"}} {
		res, err := convert(t, doc, Options{Image: tc.image})
		if err != nil {
			t.Fatal(err)
		}
		c := res.Workload.Spec.Containers
		if c["built"].Image != tc.built || c["sidecar"].Image != "envoy:1.30" {
			t.Errorf("--image %q: built %q, sidecar %q", tc.image, c["built"].Image, c["sidecar"].Image)
		}
	}
}

func TestDeprecatedArraysAreUpgraded(t *testing.T) {
	const doc = `apiVersion: score.dev/v1b1
metadata:
  name: legacy
containers:
  main:
    image: busybox
    files:
      - target: /etc/app.conf
        content: ["line one", "line two"]
    volumes:
      - target: /data
        source: ${resources.data}
        read_only: true
resources:
  data:
    type: volume
`
	res, err := convert(t, doc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Workload.Spec.Containers["main"]
	if got := *c.Files["/etc/app.conf"].Content; got != "line one\nline two" {
		t.Fatalf("content %q", got)
	}
	if v := c.Volumes["/data"]; v.ReadOnly == nil || !*v.ReadOnly {
		t.Fatalf("volume %+v", v)
	}
	if len(res.Changes) == 0 {
		t.Fatal("the upgrade must be reported")
	}
}

func TestFileSourcesAreInlinedAndRestored(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "app.conf"), []byte("port=${metadata.name}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "logo.bin"), []byte{0xff, 0xfe, 0x00}, 0o600); err != nil {
		t.Fatal(err)
	}
	const doc = `apiVersion: score.dev/v1b1
metadata:
  name: files
containers:
  main:
    image: busybox
    files:
      /etc/app.conf:
        source: app.conf
        mode: "0644"
      /srv/logo.bin:
        source: logo.bin
`
	res, err := convert(t, doc, Options{BaseDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	files := res.Workload.Spec.Containers["main"].Files
	if f := files["/etc/app.conf"]; f.Content == nil || *f.Content != "port=${metadata.name}\n" || f.Source != nil {
		t.Fatalf("text file %+v", f)
	}
	if f := files["/srv/logo.bin"]; f.BinaryContent == nil || *f.BinaryContent != "//4A" {
		t.Fatalf("binary file %+v", f)
	}
	back, err := FromWorkload(res.Workload)
	if err != nil {
		t.Fatal(err)
	}
	f := back["containers"].(map[string]any)["main"].(map[string]any)["files"].(map[string]any)["/etc/app.conf"].(map[string]any)
	if f["source"] != "app.conf" || f["content"] != nil || f["mode"] != "0644" {
		t.Fatalf("restored file %v", f)
	}

	_, err = convert(t, strings.Replace(doc, "logo.bin\n", "missing.bin\n", 1), Options{BaseDir: dir})
	if err == nil || !strings.Contains(err.Error(), "containers.main.files[/srv/logo.bin].source") {
		t.Fatalf("a missing source must name the field, got %v", err)
	}
}

func TestSchemaRejections(t *testing.T) {
	cases := []struct {
		name, doc, want string
	}{
		{"no containers", "apiVersion: score.dev/v1b1\nmetadata: {name: x1}\n", "containers"},
		{"wrong apiVersion", "apiVersion: score.dev/v2\nmetadata: {name: x1}\ncontainers: {main: {image: nginx}}\n", "apiVersion"},
		{"bad port", "apiVersion: score.dev/v1b1\nmetadata: {name: x1}\ncontainers: {main: {image: nginx}}\nservice: {ports: {web: {port: 70000}}}\n", "maximum"},
		{"unknown field", "apiVersion: score.dev/v1b1\nmetadata: {name: x1}\ncontainers: {main: {image: nginx, replicas: 2}}\n", "additionalProperties"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := convert(t, tc.doc, Options{})
			var se *SchemaError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want a schema error mentioning %q, got %v", tc.want, err)
			}
		})
	}
}

// A Score file annotated with the converter's own bookkeeping keys is refused: converted, it
// would come back without them or with its metadata replaced (FuzzScoreMetadata).
func TestReservedAnnotationsAreRefused(t *testing.T) {
	for _, key := range []string{scorev1b1.AnnotationScoreMetadata, scorev1b1.AnnotationFileSources, "kubectl.kubernetes.io/last-applied-configuration"} {
		doc := "apiVersion: score.dev/v1b1\nmetadata:\n  name: hello\n  annotations:\n    " + key + ": '{}'\ncontainers:\n  main:\n    image: nginx\n"
		_, err := convert(t, doc, Options{})
		var reserved *ReservedAnnotationError
		if !errors.As(err, &reserved) || reserved.Key != key {
			t.Errorf("%s: want a ReservedAnnotationError, got %v", key, err)
		}
	}
}

// An empty collection — written so, or a legacy files list of one null entry, which upgrades
// to files: {} — is absent from the Workload: kept as an empty map, the way back would make it
// absent, and converting back and forth would change the Workload. Empty and absent are one
// Workload (FuzzScoreRoundTrip, testdata/fuzz/FuzzScoreRoundTrip/9e782d9eda1e7a03).
func TestEmptyCollectionsAreAbsent(t *testing.T) {
	for name, text := range map[string]string{
		"a files list of one null entry": "apiVersion: score.dev/v1b1\nmetadata: {name: web}\ncontainers:\n  main:\n    image: nginx\n    files:\n      -\n",
		"empty collections":              "apiVersion: score.dev/v1b1\nmetadata: {name: web}\ncontainers:\n  main: {image: nginx, command: [], args: [], variables: {}, files: {}, volumes: {}}\nresources: {}\n",
	} {
		t.Run(name, func(t *testing.T) {
			docs, err := DecodeDocuments([]byte(text))
			if err != nil {
				t.Fatal(err)
			}
			res, err := ToWorkload(docs[0], Options{Namespace: "ns"})
			if err != nil {
				t.Fatal(err)
			}
			back, err := FromWorkload(res.Workload)
			if err != nil {
				t.Fatal(err)
			}
			again, err := ToWorkload(back, Options{Namespace: "ns"})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(again.Workload, res.Workload) {
				t.Fatalf("converting back and forth changed the Workload:\n%#v\n%#v", res.Workload.Spec, again.Workload.Spec)
			}
		})
	}
}
