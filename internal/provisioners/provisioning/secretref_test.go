package provisioning

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"text/template"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/templating/tplfuncs"
)

// endpoint is a careless endpoint definition: params.path echoed into the url output, so a
// tenant's param can carry a secret reference into an output.
var endpoint = orchconfig.Provisioner{URI: "template://t/endpoint", Type: "endpoint",
	Outputs: `url: {{ printf "http://api.%s.svc:80%s" .Namespace (.Params.path | default "") | quote }}`}

// A reference resolves only when the definition made it in the run, and only to a Secret of
// the instance or one the definition lists; the rest is refused, naming what, so a tenant's
// param cannot read another Secret of the namespace.
func TestRunResolvesOnlyTheReferencesTheDefinitionMade(t *testing.T) {
	// The Secrets the environment holds: the instance's own (labelled), one an object of the
	// run owns, another instance's, the platform's.
	secrets := map[string]ReferencedSecret{
		"own":      {Labels: map[string]string{scorev1b1.LabelInstance: "own-instance"}},
		"operator": {Owners: []string{"uid-of-the-cluster"}},
		"pg-other": {Labels: map[string]string{scorev1b1.LabelInstance: "0123456789abcdef"}},
		"platform": {},
	}
	read := func(_ context.Context, ref SecretRef) (ReferencedSecret, error) {
		s, ok := secrets[ref.Name]
		if !ok {
			return ReferencedSecret{}, errors.New("not found")
		}
		s.Value, s.HasKey = "value-of-"+ref.Name, true
		return s, nil
	}
	placed := func(_ context.Context, objs []*unstructured.Unstructured, _ *unstructured.Unstructured, save func(context.Context) error) (Applied, error) {
		return Applied{Objects: []scorev1b1.AppliedObject{{Kind: "Cluster", Name: "pg", UID: "uid-of-the-cluster"}}}, save(context.Background())
	}
	withOutputs := func(outputs string) orchconfig.Provisioner {
		return orchconfig.Provisioner{URI: "template://t/x", Type: "x", Outputs: outputs,
			Manifests: `- {apiVersion: v1, kind: Secret, metadata: {name: made}, stringData: {password: made-here}}`}
	}
	cmd := func(outputs map[string]any) func(context.Context, orchconfig.Provisioner, Data) (Result, error) {
		return func(context.Context, orchconfig.Provisioner, Data) (Result, error) {
			return Result{Outputs: outputs}, nil
		}
	}
	for _, tc := range []struct {
		name   string
		def    orchconfig.Provisioner
		params map[string]any
		state  map[string]any
		env    func(*Env)
		// secret is the secret output wanted, or refused the words of the refusal.
		secret, refused string
	}{
		{name: "encodeSecretRef of a Secret its manifests create", def: withOutputs(`password: {{ encodeSecretRef "made" "password" }}`), secret: "made-here"},
		{name: "a reference in the template's own text (score-k8s's example)", def: withOutputs(`password: 🔐💬made_password💬🔐`), secret: "made-here"},
		{name: "the instance's labelled Secret", def: withOutputs(`password: {{ encodeSecretRef "own" "password" }}`), secret: "value-of-own"},
		{name: "a Secret an object of the run owns (an operator's)", def: withOutputs(`password: {{ encodeSecretRef "operator" "password" }}`), secret: "value-of-operator"},
		{name: "a platform Secret the definition lists", def: func() orchconfig.Provisioner {
			d := withOutputs(`token: {{ encodeSecretRef "platform" "token" }}`)
			d.PlatformSecrets = []string{"plat*"}
			return d
		}(), secret: "value-of-platform"},
		{name: "a platform Secret the definition does not list", def: withOutputs(`token: {{ encodeSecretRef "platform" "token" }}`),
			refused: "secret platform is not the instance's"},
		{name: "another instance's Secret", def: withOutputs(`password: {{ encodeSecretRef "pg-other" "password" }}`),
			refused: "secret pg-other is not the instance's"},
		{name: "the endpoint's path param echoed into its url", def: endpoint, params: map[string]any{"path": "/🔐💬pg-other_password💬🔐"},
			refused: "params.path holds 🔐 or 💬"},
		{name: "a reference spelled across two params", def: orchconfig.Provisioner{URI: "template://t/y", Type: "y", Outputs: `url: {{ printf "%s%s" .Params.a .Params.b | quote }}`},
			params: map[string]any{"a": "x🔐", "b": "💬own_password💬🔐"}, refused: "params.a holds"},
		{name: "a reference kept in the state", def: func() orchconfig.Provisioner {
			d := withOutputs(`password: {{ .State.ref | quote }}`)
			d.State = `ref: {{ .State.ref | quote }}`
			return d
		}(), state: map[string]any{"ref": "🔐💬own_password💬🔐"},
			refused: "output password holds a secret reference the definition did not make"},
		{name: "a reference in a runnable run's published outputs", def: orchconfig.Provisioner{URI: "runnable://t/build", Type: "image",
			Manifests: "- {apiVersion: batch/v1, kind: Job, metadata: {name: build}, spec: {template: {spec: {containers: [{name: b, image: b}]}}}}"},
			env: func(e *Env) {
				e.Apply = func(context.Context, []*unstructured.Unstructured, *unstructured.Unstructured, func(context.Context) error) (Applied, error) {
					return Applied{RunOutputs: map[string]any{"image": "🔐💬own_password💬🔐"}}, nil
				}
			}, refused: "output image holds a secret reference the definition did not make"},
		{name: "a command's own reference", def: orchconfig.Provisioner{URI: "cmd:///bin/kv", Type: "kv"},
			env: func(e *Env) {
				e.Command = cmd(map[string]any{"password": "🔐💬own_password💬🔐"})
			}, secret: "value-of-own"},
		{name: "an http+api definition's own reference", def: orchconfig.Provisioner{URI: "http+api://t/db", Type: "db", API: &orchconfig.API{},
			Outputs: `password: {{ encodeSecretRef "own" "password" }}`},
			env: func(e *Env) {
				e.API = func(_ context.Context, def orchconfig.Provisioner, data Data, _ func(context.Context, Result) error) (Result, *Progress, error) {
					out, err := RenderOutputs(def, data)
					return Result{Outputs: out}, nil, err
				}
			}, secret: "value-of-own"},
		{name: "an external API's answer echoed", def: orchconfig.Provisioner{URI: "http+api://t/db", Type: "db", API: &orchconfig.API{},
			Outputs: `password: {{ .State.created.name | quote }}`},
			env: func(e *Env) {
				e.API = func(_ context.Context, def orchconfig.Provisioner, data Data, _ func(context.Context, Result) error) (Result, *Progress, error) {
					data.State = map[string]any{"created": map[string]any{"name": "🔐💬own_password💬🔐"}}
					out, err := RenderOutputs(def, data)
					return Result{Outputs: out}, nil, err
				}
			}, refused: "output password holds a secret reference the definition did not make"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := Env{Secret: read, Apply: placed}
			if tc.env != nil {
				tc.env(&env)
			}
			in := runInput(tc.def)
			in.Data.Params, in.Data.State = tc.params, tc.state
			secrets["own"].Labels[scorev1b1.LabelInstance] = in.Data.Identity.Hash()
			out, err := Run(context.Background(), in, env)
			if tc.refused != "" {
				if !errors.Is(err, ErrReferenceRefused) || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("want refused with %q, got %v", tc.refused, err)
				}
				for _, s := range secrets {
					if strings.Contains(err.Error(), s.Value) && s.Value != "" {
						t.Fatalf("the refusal holds a Secret's value: %v", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, v := range out.Secret {
				got = append(got, v)
			}
			if len(got) != 1 || got[0] != tc.secret {
				t.Fatalf("secret outputs %v, want %q", out.Secret, tc.secret)
			}
		})
	}
}

// The mark of a run's references never leaves the run: what it keeps and applies holds
// score-k8s's references, and a stamped run's name does not change with the process.
func TestTheRunsMarkStaysInTheRun(t *testing.T) {
	def := orchconfig.Provisioner{URI: "runnable://t/migrate", Type: "migration",
		State:     `ref: {{ encodeSecretRef "own" "password" }}`,
		Shared:    `refs: {{ encodeSecretRef "own" "password" | quote }}`,
		Manifests: "- {apiVersion: batch/v1, kind: Job, metadata: {name: migrate, annotations: {ref: {{ encodeSecretRef \"own\" \"password\" | quote }}}}, spec: {template: {spec: {containers: [{name: m, image: m}]}}}}"}
	rec := &recorder{}
	var applied []byte
	env := rec.env()
	env.Apply = func(ctx context.Context, objs []*unstructured.Unstructured, run *unstructured.Unstructured, save func(context.Context) error) (Applied, error) {
		applied, _ = json.Marshal(objs)
		return Applied{}, save(ctx)
	}
	if _, err := Run(context.Background(), runInput(def), env); err != nil {
		t.Fatal(err)
	}
	kept, _ := json.Marshal(rec.saved)
	for what, text := range map[string][]byte{"the state": kept, "the applied objects": applied} {
		if strings.Contains(string(text), referenceMark()) || !strings.Contains(string(text), "🔐💬own_password💬🔐") {
			t.Errorf("%s: %s", what, text)
		}
	}
}

// A template's references are marked where the template makes them — its calls of
// encodeSecretRef, however written, and score-k8s's prefix in its own text — and nowhere else.
func TestMadeTextMarksWhatTheTemplateMakes(t *testing.T) {
	made := strings.NewReplacer("🔐💬M/", madePrefix())
	data := Data{Init: map[string]any{"name": "pg"}, Params: map[string]any{"key": "password"}}
	for _, tc := range []struct{ name, text, want string }{
		{"a call", `{{ encodeSecretRef .Init.name "password" }}`, "🔐💬M/pg_password💬🔐"},
		{"a call in a pipeline", `{{ "password" | encodeSecretRef .Init.name }}`, "🔐💬M/pg_password💬🔐"},
		{"a call inside printf, in a variable", `{{- $c := printf "u:%s@h" (encodeSecretRef .Init.name .Params.key) }}{{ $c }}`, "u:🔐💬M/pg_password💬🔐@h"},
		{"a call in a branch of a range", `{{ range $k, $v := .Init }}{{ if $v }}{{ encodeSecretRef $v "k" }}{{ end }}{{ end }}`, "🔐💬M/pg_k💬🔐"},
		{"a call in a defined template", `{{ define "ref" }}{{ encodeSecretRef . "k" }}{{ end }}{{ template "ref" .Init.name }}`, "🔐💬M/pg_k💬🔐"},
		{"score-k8s's reference in the text", `🔐💬pg-{{ .Init.name }}_password💬🔐`, "🔐💬M/pg-pg_password💬🔐"},
		{"the name in a string and a comment", `{{/* encodeSecretRef */}}{{ "encodeSecretRef" }}`, "encodeSecretRef"},
		{"no reference", `{{ .Init.name }}`, "pg"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tpl, err := template.New("t").Funcs(tplfuncs.Provisioner()).Parse(madeText(tc.text))
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			if err := tpl.Execute(&b, data); err != nil {
				t.Fatal(err)
			}
			if want := made.Replace(tc.want); b.String() != want {
				t.Fatalf("got %q, want %q", b.String(), want)
			}
		})
	}
}

// kubectl apply (client-side) records the whole Workload in the annotation
// kubectl.kubernetes.io/last-applied-configuration, its variables and files among it; were
// it checked, every claim of a Workload with a reference's characters in a variable would be
// refused as that annotation's. A definition does not see the record with the Workload's
// metadata, so nothing of a variable reaches it; the Workload's other annotations it sees, and
// they are checked.
func TestAClientSideApplysRecordReachesNoDefinition(t *testing.T) {
	w := &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web", Annotations: map[string]string{"team": "payments",
		corev1.LastAppliedConfigAnnotation: `{"spec":{"containers":{"main":{"image":"nginx","variables":{"X":"🔐💬own_password💬🔐"}}}}}`}}}
	echo := orchconfig.Provisioner{URI: "template://t/echo", Type: "echo", Outputs: `annotations: {{ .WorkloadMetadata.annotations | toJson | quote }}`}
	run := func() (Outcome, error) {
		in := runInput(echo)
		in.Data.SourceWorkload = w
		return Run(context.Background(), in, (&recorder{}).env())
	}
	out, err := run()
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Plain["annotations"]; got != `{"team":"payments"}` {
		t.Fatalf("the definition saw the annotations %v", got)
	}
	w.Annotations["team"] = "💬"
	if _, err := run(); !errors.Is(err, ErrReferenceRefused) || !strings.Contains(err.Error(), "the workload's metadata.annotations.team holds 🔐 or 💬") {
		t.Fatalf("want the team annotation refused, got %v", err)
	}
}
