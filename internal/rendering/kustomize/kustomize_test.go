package kustomize

import (
	"bytes"
	"strings"
	"testing"
)

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
  annotations:
    score.dev/pod: workload
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: main
          image: main
          ports: [{containerPort: 8080}]
`

const service = `apiVersion: v1
kind: Service
metadata:
  name: app
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
`

func files(kustomization string, extra ...string) map[string][]byte {
	f := map[string][]byte{"kustomization.yaml": []byte(kustomization), "deployment.yaml": []byte(deployment), "service.yaml": []byte(service)}
	for i := 0; i+1 < len(extra); i += 2 {
		f[extra[i]] = []byte(extra[i+1])
	}
	return f
}

func input(f map[string][]byte) Input {
	return Input{
		Files:     f,
		Namespace: "team", NamePrefix: "web-",
		SelectorLabels: map[string]string{"score.dev/workload": "web"},
		Labels:         map[string]string{"app.kubernetes.io/name": "web"},
		Images:         []Image{{Name: "main", NewName: "registry.local/web", NewTag: "1.2"}},
		Pod: map[string]any{"containers": []any{map[string]any{"name": "main", "image": "nginx:1.27", "env": []any{map[string]any{"name": "A", "value": "1"}}}},
			"volumes": []any{map[string]any{"name": "files", "configMap": map[string]any{"name": "web-files"}}}},
		Values:   map[string]any{"replicas": 3.0, "greeting": "hello", "service": map[string]any{"ports": map[string]any{"http": map[string]any{"port": 80.0}}}, "list": []any{"x"}},
		Workload: map[string]any{"name": "web", "namespace": "team"},
	}
}

func TestRender(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      Input
		want    []string
		wantNot []string
		wantErr string
	}{
		{
			name: "namespace, prefix and labels reach every object and the selectors",
			in:   input(files("resources: [deployment.yaml, service.yaml]\n")),
			want: []string{"name: web-app\n  namespace: team\n", "kind: Service", "selector:\n    app: web\n    score.dev/workload: web", "matchLabels:\n      app: web\n      score.dev/workload: web"},
		},
		{
			name: "the workload's pod merges into the annotated object by container name",
			in:   input(files("resources: [deployment.yaml]\n")),
			want: []string{"- env:\n        - name: A\n          value: \"1\"\n        image: nginx:1.27\n        name: main\n        ports:\n        - containerPort: 8080", "configMap:\n          name: web-files"},
		},
		{
			name: "images are replaced by name where the pod does not set them",
			in: func() Input {
				in := input(files("resources: [deployment.yaml]\n"))
				in.Pod = nil
				return in
			}(),
			want: []string{"image: registry.local/web:1.2"},
		},
		{
			name: "replacements read typed values from score-values.yaml, which is not emitted",
			in: input(files(`resources: [deployment.yaml, score-values.yaml]
replacements:
  - source: {kind: ScoreValues, name: score-values, fieldPath: values.replicas}
    targets:
      - select: {kind: Deployment}
        fieldPaths: [spec.replicas]
`)),
			want: []string{"replicas: 3\n"}, wantNot: []string{"ScoreValues", "local-config"},
		},
		{
			name: "configMapGenerator reads score-values.env, and references follow the generated name",
			in: input(files(`resources: [deployment.yaml]
configMapGenerator:
  - name: settings
    envs: [score-values.env]
patches:
  - target: {kind: Deployment}
    patch: |
      - op: add
        path: /spec/template/spec/volumes
        value: [{name: settings, configMap: {name: settings}}]
`)),
			want:    []string{"greeting: hello\n  replicas: \"3\"\n  service.ports.http.port: \"80\"\n", "name: web-settings-"},
			wantNot: []string{"list"},
		},
		{name: "a remote resource is refused", in: input(files("resources: [https://example.invalid/app.yaml]\n")), wantErr: "is remote"},
		{name: "a remote git base is refused", in: input(files("resources: ['github.com/org/repo//base?ref=v1']\n")), wantErr: "is remote"},
		{name: "an scp git base is refused", in: input(files("components: ['git@example.invalid:org/repo.git']\n")), wantErr: "is remote"},
		{name: "a remote patch is refused", in: input(files("resources: [deployment.yaml]\npatches:\n  - path: http://example.invalid/p.yaml\n")), wantErr: "is remote"},
		{name: "a remote file in an inline transformer is refused", in: input(files("resources: [deployment.yaml]\ntransformers:\n  - |\n    apiVersion: builtin\n    kind: PatchTransformer\n    metadata: {name: p}\n    path: https://example.invalid/p.yaml\n")), wantErr: "is remote"},
		{name: "a remote base in a nested kustomization is refused", in: input(files("resources: [base]\n", "base/kustomization.yaml", "resources: ['ssh://example.invalid/repo']\n")), wantErr: "base/kustomization.yaml"},
		{name: "helm inflation is refused", in: input(files("helmCharts: [{name: x}]\n")), wantErr: "helmCharts would run helm"},
		{name: "an exec plugin is refused", in: input(files("resources: [deployment.yaml]\ntransformers: [plugin.yaml]\n", "plugin.yaml", "apiVersion: example.invalid/v1\nkind: Exec\nmetadata:\n  name: x\n  annotations:\n    config.kubernetes.io/function: |\n      exec: {path: /bin/sh}\n")), wantErr: "does not build"},
		{name: "a file outside the template is refused", in: input(files("resources: [../etc/passwd]\n")), wantErr: "does not build"},
		{name: "no kustomization", in: input(map[string][]byte{"deployment.yaml": []byte(deployment)}), wantErr: "no kustomization.yaml"},
		{name: "a reserved file", in: input(files("resources: []\n", ValuesFile, "x")), wantErr: "reserved"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Render(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("want an error with %q, got %v\n%s", tc.wantErr, err, out)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("want %q in\n%s", w, out)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(string(out), w) {
					t.Errorf("want no %q in\n%s", w, out)
				}
			}
		})
	}
}

func TestRenderIsDeterministic(t *testing.T) {
	in := input(files("resources: [deployment.yaml, service.yaml]\nconfigMapGenerator:\n  - name: settings\n    envs: [score-values.env]\n"))
	first, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		again, err := Render(input(files("resources: [deployment.yaml, service.yaml]\nconfigMapGenerator:\n  - name: settings\n    envs: [score-values.env]\n")))
		if err != nil || !bytes.Equal(first, again) {
			t.Fatalf("build %d differs: %v\n%s\n---\n%s", i, err, first, again)
		}
	}
}
