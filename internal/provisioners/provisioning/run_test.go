package provisioning

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
)

// kv renders a Secret and a ConfigMap, a state, a secret output from its own Secret and one
// from a Secret the platform owns.
var kv = orchconfig.Provisioner{URI: "template://t/kv", Type: "kv", PlatformSecrets: []string{"platform"},
	State: `password: {{ dig "password" "p4ss" .State | quote }}`,
	Outputs: `host: kv.{{ .Namespace }}
password: {{ encodeSecretRef "kv" "password" }}
token: {{ encodeSecretRef "platform" "token" }}`,
	Manifests: `- {apiVersion: v1, kind: Secret, metadata: {name: kv}, stringData: {password: {{ .State.password | quote }}}}
- {apiVersion: v1, kind: ConfigMap, metadata: {name: kv}}`}

// recorder is an Env whose I/O records what the run asked of it.
type recorder struct {
	saved   []Result
	applied []string
	run     *unstructured.Unstructured
}

func (r *recorder) env() Env {
	return Env{
		SaveState: func(_ context.Context, res Result) error { r.saved = append(r.saved, res); return nil },
		Apply: func(ctx context.Context, objs []*unstructured.Unstructured, run *unstructured.Unstructured, save func(context.Context) error) (Applied, error) {
			if err := save(ctx); err != nil {
				return Applied{}, err
			}
			for _, o := range objs {
				r.applied = append(r.applied, o.GetKind()+"/"+o.GetName())
			}
			r.run = run
			return Applied{Objects: []scorev1b1.AppliedObject{{Kind: "ConfigMap", Name: "kv"}}}, nil
		},
		Secret: func(_ context.Context, ref SecretRef) (ReferencedSecret, error) {
			return ReferencedSecret{Value: "secret-" + ref.Name + "-" + ref.Key, HasKey: true}, nil
		},
	}
}

func runInput(def orchconfig.Provisioner) RunInput {
	return RunInput{Definition: def, Data: DataInput{Identity: NewIdentity("team", "web", "db", def.Type, "", ""), Source: "web"}}
}

// A run provisions, keeps the state, places the objects, then splits the outputs: a Secret its
// manifests create is read from them, any other through the environment.
func TestRun(t *testing.T) {
	rec := &recorder{}
	out, err := Run(context.Background(), runInput(kv), rec.env())
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.saved) != 1 || rec.saved[0].State["password"] != "p4ss" {
		t.Fatalf("state kept %v", rec.saved)
	}
	if strings.Join(rec.applied, ",") != "Secret/kv,ConfigMap/kv" || rec.run != nil {
		t.Fatalf("applied %v, run %v", rec.applied, rec.run)
	}
	if fmt.Sprint(out.Plain) != "map[host:kv.team]" || fmt.Sprint(out.Secret) != "map[password:p4ss token:secret-platform-token]" {
		t.Fatalf("plain %v secret %v", out.Plain, out.Secret)
	}
	if len(out.Applied.Objects) != 1 || out.StandIn || out.Progress != nil {
		t.Fatalf("outcome %+v", out)
	}
}

// Each step's error says the step, with its own message.
func TestRunStopsAtTheStepThatFailed(t *testing.T) {
	refused := errors.New("refused")
	broken := kv
	broken.Outputs = `value: {{ fail "no capacity left" }}`
	for _, tc := range []struct {
		name    string
		def     orchconfig.Provisioner
		env     func(Env) Env
		step    Step
		applied bool
	}{
		{"the definition", broken, func(e Env) Env { return e }, StepProvision, false},
		{"the state", kv, func(e Env) Env {
			e.SaveState = func(context.Context, Result) error { return refused }
			return e
		}, StepState, false},
		{"placing the objects, what was placed kept", kv, func(e Env) Env {
			apply := e.Apply
			e.Apply = func(ctx context.Context, objs []*unstructured.Unstructured, run *unstructured.Unstructured, save func(context.Context) error) (Applied, error) {
				a, _ := apply(ctx, objs, run, save)
				return a, refused
			}
			return e
		}, StepApply, true},
		{"a Secret an output refers to", kv, func(e Env) Env {
			e.Secret = func(context.Context, SecretRef) (ReferencedSecret, error) { return ReferencedSecret{}, refused }
			return e
		}, StepOutputs, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			out, err := Run(context.Background(), runInput(tc.def), tc.env(rec.env()))
			var step *StepError
			if !errors.As(err, &step) || step.Step != tc.step || StepOf(err) != tc.step {
				t.Fatalf("error %v, want one of step %d", err, tc.step)
			}
			if tc.step != StepProvision && (!errors.Is(err, refused) || !strings.HasSuffix(err.Error(), "refused")) {
				t.Fatalf("error %q is not the step's own", err)
			}
			if (len(out.Applied.Objects) > 0) != tc.applied {
				t.Fatalf("applied %v", out.Applied.Objects)
			}
		})
	}
}

// A run whose objects wait for a definition to be served stops there: its outputs are not
// resolved.
func TestRunStopsWhileObjectsWait(t *testing.T) {
	rec := &recorder{}
	env := rec.env()
	env.Secret = nil
	env.Apply = func(context.Context, []*unstructured.Unstructured, *unstructured.Unstructured, func(context.Context) error) (Applied, error) {
		return Applied{Waiting: []string{"CustomResourceDefinition kvs.example.com"}}, nil
	}
	out, err := Run(context.Background(), runInput(kv), env)
	if err != nil || out.Applied.Complete() || out.Plain != nil {
		t.Fatalf("outcome %+v, %v", out, err)
	}
}

// A runnable:// run is placed as the run, and the outputs it publishes are added to its own.
func TestRunAddsTheRunsOutputs(t *testing.T) {
	def := orchconfig.Provisioner{URI: "runnable://t/migrate", Type: "migration", Outputs: "version: rendered\nhost: db",
		Manifests: "- {apiVersion: batch/v1, kind: Job, metadata: {name: migrate}, spec: {template: {spec: {containers: [{name: m, image: m}]}}}}"}
	rec := &recorder{}
	env := rec.env()
	env.Apply = func(_ context.Context, objs []*unstructured.Unstructured, run *unstructured.Unstructured, _ func(context.Context) error) (Applied, error) {
		rec.run = run
		return Applied{RunOutputs: map[string]any{"version": "42"}}, nil
	}
	out, err := Run(context.Background(), runInput(def), env)
	if err != nil {
		t.Fatal(err)
	}
	if rec.run == nil || !strings.HasPrefix(rec.run.GetName(), "migrate-") || fmt.Sprint(out.Plain) != "map[host:db version:42]" {
		t.Fatalf("run %v, outputs %v", rec.run, out.Plain)
	}
}

// Offline, a command or an external API is not reached: each expected output is a stand-in.
// Online, a strategy whose I/O the environment does not give cannot run.
func TestRunReachesNoCommandOrAPIOffline(t *testing.T) {
	for _, uri := range []string{"cmd:///bin/dns", "http+api://acme/db"} {
		def := orchconfig.Provisioner{URI: uri, Type: "dns", ExpectedOutputs: []string{"host"}, API: &orchconfig.API{}}
		out, err := Run(context.Background(), runInput(def), Env{Offline: true})
		if err != nil || !out.StandIn || out.Plain["host"] != "<output host of "+uri+", known in the cluster>" || len(out.Secret) != 0 {
			t.Fatalf("%s offline: %+v, %v", uri, out, err)
		}
		if _, err := Run(context.Background(), runInput(def), Env{}); !errors.Is(err, ErrNotRunnable) {
			t.Fatalf("%s without its I/O: %v", uri, err)
		}
	}
}

// An http+api:// run is the step Env.API takes: its progress while it is not ready, its
// outputs when it is, the api block's secret outputs moved into the secret ones.
func TestRunTakesAnAPIStep(t *testing.T) {
	def := orchconfig.Provisioner{URI: "http+api://acme/db", Type: "db", API: &orchconfig.API{SecretOutputs: []string{"password", "ports"}}}
	var saved []Result
	env := Env{SaveState: func(_ context.Context, res Result) error { saved = append(saved, res); return nil }}
	env.API = func(ctx context.Context, _ orchconfig.Provisioner, data Data, save func(context.Context, Result) error) (Result, *Progress, error) {
		if err := save(ctx, Result{State: map[string]any{"phase": "Pending"}}); err != nil {
			return Result{}, nil, err
		}
		if data.State["phase"] != "Ready" {
			return Result{}, &Progress{Phase: ProgressPending, Message: "creating", After: time.Second}, nil
		}
		return Result{Outputs: map[string]any{"host": "db.example", "password": "pw", "ports": []any{5432}}}, nil, nil
	}
	out, err := Run(context.Background(), runInput(def), env)
	if err != nil || out.Progress == nil || out.Progress.Message != "creating" || out.Plain != nil || len(saved) != 1 {
		t.Fatalf("pending: %+v, %v, saved %v", out, err, saved)
	}
	in := runInput(def)
	in.Data.State = map[string]any{"phase": "Ready"}
	out, err = Run(context.Background(), in, env)
	if err != nil || out.Progress != nil || fmt.Sprint(out.Plain) != "map[host:db.example]" || fmt.Sprint(out.Secret) != "map[password:pw ports:[5432]]" {
		t.Fatalf("ready: %+v, %v", out, err)
	}
	env.SaveState = func(context.Context, Result) error { return errors.New("raced") }
	if _, err := Run(context.Background(), runInput(def), env); StepOf(err) != StepState {
		t.Fatalf("a state the step could not keep: %v (step %d)", err, StepOf(err))
	}
}

// The state is kept once, by the placing when there is one (Env.Apply calls save before it
// changes anything), else before the run ends; a state that could not be kept is the run's
// StepState error, whatever the placing returned.
func TestRunKeepsTheStateThroughThePlacing(t *testing.T) {
	rec := &recorder{}
	env := rec.env()
	env.Apply = nil
	if _, err := Run(context.Background(), runInput(kv), env); err != nil || len(rec.saved) != 1 {
		t.Fatalf("without placing: saved %d times, %v", len(rec.saved), err)
	}

	rec = &recorder{}
	env = rec.env()
	raced := errors.New("raced")
	env.SaveState = func(context.Context, Result) error { return raced }
	placed := env.Apply
	env.Apply = func(ctx context.Context, objs []*unstructured.Unstructured, run *unstructured.Unstructured, save func(context.Context) error) (Applied, error) {
		a, err := placed(ctx, objs, run, save)
		return a, fmt.Errorf("stopped: %w", err)
	}
	if _, err := Run(context.Background(), runInput(kv), env); StepOf(err) != StepState || !errors.Is(err, raced) {
		t.Fatalf("a state the placing could not keep: %v (step %d)", err, StepOf(err))
	}
}
