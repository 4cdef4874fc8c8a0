package scoreorchestrator_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/offline"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/scorefile"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/apply"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/prepare"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/planner"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/selection"
	"github.com/score-orchestrator/score-orchestrator/internal/provisioners/provisioning"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/render"
	"github.com/score-orchestrator/score-orchestrator/internal/status/claimdecision"
	"github.com/score-orchestrator/score-orchestrator/internal/status/mirror"
	"github.com/score-orchestrator/score-orchestrator/internal/status/plandecision"
	"github.com/score-orchestrator/score-orchestrator/internal/status/workloaddecision"
	"github.com/score-orchestrator/score-orchestrator/internal/status/workloadstatus"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// catalogueRow is one row of a docs/errors.md table: what is wrong, the input that is wrong
// that way, and the message the code gives for it.
type catalogueRow struct {
	what, input, message string
}

// TestErrorCatalogue runs every row of every table in docs/errors.md through the pure
// function that judges that kind of input, and compares the message the code gives with
// the one the page documents. A table is introduced by <!-- catalogue: KIND -->.
func TestErrorCatalogue(t *testing.T) {
	data, err := os.ReadFile("docs/errors.md")
	if err != nil {
		t.Fatal(err)
	}
	tables := parseCatalogue(t, string(data))
	// A Workload row is first sent to a real API server (a server-side dry run: OpenAPI and
	// CEL validation, nothing stored). An input it refuses never reaches the orchestrator, so
	// its row must document the API server's refusal.
	env := testenv.StartForTest(t)
	testenv.Create(t, env.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}})
	admit := func(w *scorev1b1.Workload) error {
		w = w.DeepCopy()
		w.Namespace = "team-a"
		if err := env.Client.Create(context.Background(), w, client.DryRunAll); err != nil {
			return fmt.Errorf("the API server refuses it: %w", err)
		}
		return nil
	}
	checks := map[string]func(t *testing.T, input string) string{
		"score-file": scoreFileMessage,
		"workload": func(t *testing.T, input string) string {
			return workloadMessage(t, input, admit)
		},
		"config":                 configMessage,
		"provisioner-definition": configMessage,
		"provisioner-run":        provisionerMessage,
		"template":               templateMessage,
		"exposure":               exposureMessage,
		"conflict": func(t *testing.T, input string) string {
			return conflictMessage(t, input, admit)
		},
	}
	for kind := range checks {
		if len(tables[kind]) == 0 {
			t.Errorf("docs/errors.md has no %s table", kind)
		}
	}
	for kind, rows := range tables {
		check, ok := checks[kind]
		if !ok {
			t.Errorf("docs/errors.md has a %s table, which no check reads", kind)
			continue
		}
		for _, row := range rows {
			t.Run(kind+"/"+row.what, func(t *testing.T) {
				got, _, _ := strings.Cut(check(t, row.input), "\n") // a table shows the first line
				if got != row.message {
					t.Errorf("input %s\n  documented: %s\n  the code:   %s", row.input, row.message, got)
				}
			})
		}
	}
}

var catalogueMarker = regexp.MustCompile(`^<!-- catalogue: ([a-z-]+) -->$`)

// parseCatalogue reads the tables after each marker: a header, a separator, then rows of
// three cells (what, input, message), input and message in code spans.
func parseCatalogue(t *testing.T, doc string) map[string][]catalogueRow {
	out := map[string][]catalogueRow{}
	lines := strings.Split(doc, "\n")
	for i := 0; i < len(lines); i++ {
		m := catalogueMarker.FindStringSubmatch(strings.TrimSpace(lines[i]))
		if m == nil {
			continue
		}
		j := i + 1
		for j < len(lines) && !strings.HasPrefix(lines[j], "|") {
			j++
		}
		for j += 2; j < len(lines) && strings.HasPrefix(lines[j], "|"); j++ {
			cells := splitRow(lines[j])
			if len(cells) != 3 {
				t.Fatalf("docs/errors.md:%d: want 3 cells, found %d", j+1, len(cells))
			}
			out[m[1]] = append(out[m[1]], catalogueRow{what: cells[0], input: codeSpan(t, j, cells[1]), message: codeSpan(t, j, cells[2])})
		}
		i = j
	}
	return out
}

func splitRow(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cur.WriteByte('|')
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(line[i])
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

// codeSpan returns the text of a cell written as one code span (`x`, or “ x “ when x
// holds a backtick).
func codeSpan(t *testing.T, line int, cell string) string {
	switch {
	case len(cell) >= 6 && strings.HasPrefix(cell, "`` ") && strings.HasSuffix(cell, " ``"):
		return cell[3 : len(cell)-3]
	case len(cell) >= 2 && strings.HasPrefix(cell, "`") && strings.HasSuffix(cell, "`"):
		return cell[1 : len(cell)-1]
	}
	t.Fatalf("docs/errors.md:%d: %q is not a code span", line+1, cell)
	return ""
}

func fromYAML(t *testing.T, text string, out any) {
	t.Helper()
	var v any
	if err := yaml.Unmarshal([]byte(text), &v); err != nil {
		t.Fatalf("the input is not YAML: %v", err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("the input does not decode: %v", err)
	}
}

// scoreFileMessage converts a Score file as scorectl convert does; files[].source is read
// relative to /nonexistent.
func scoreFileMessage(t *testing.T, input string) string {
	docs, err := scorefile.DecodeDocuments([]byte(input))
	if err != nil {
		return err.Error()
	}
	if _, err := scorefile.ToWorkload(docs[0], scorefile.Options{BaseDir: "/nonexistent"}); err != nil {
		return err.Error()
	}
	return "(converted)"
}

// workloadMessage is the InputsValid message the orchestrator writes for a Workload (name
// web, namespace team-a) under the sample config: the input checks, then selection; or the
// API server's refusal (admit).
func workloadMessage(t *testing.T, input string, admit func(*scorev1b1.Workload) error) string {
	w := &scorev1b1.Workload{}
	fromYAML(t, input, w)
	w.Name, w.Namespace = "web", "team-a"
	if err := admit(w); err != nil {
		return err.Error()
	}
	cfg, err := orchconfig.Parse(sampleConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	if problems := planner.CheckInputs(w, planner.Allowed{ProbeHosts: cfg.ProbeHostsAllowed(w.Namespace, nil)}); len(problems) > 0 {
		c := workloadstatus.SpecInvalid(problems[0].String(), len(problems)-1)
		return string(c.Reason) + ": " + c.Message
	}
	if refused := workloaddecision.NamedVolumeRefused(w, cfg, nil, workloaddecision.InstanceVolumes{}); refused != "" {
		c := workloadstatus.PolicyRefused(refused)
		return string(c.Reason) + ": " + c.Message
	}
	sel, err := selection.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r := sel.Select(selection.Input{Workload: w}); !r.OK {
		return string(r.Reason) + ": " + r.Message
	}
	// The claims, with the development catalog (what its definitions say of their params).
	data, err := os.ReadFile("config/default/orchestrator-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err = orchconfig.Parse(data); err != nil {
		t.Fatal(err)
	}
	var problem planner.Problem
	if _, err := planner.DesiredClaims(planner.ClaimsInput{Workload: w, Provisioners: cfg.Provisioners, Classes: cfg.Classes}); errors.As(err, &problem) {
		c := workloadstatus.SpecInvalid(problem.String(), 0)
		return string(c.Reason) + ": " + c.Message
	}
	return "(valid)"
}

func sampleConfig(t *testing.T) []byte {
	data, err := os.ReadFile("config/samples/orchestrator-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// configMessage changes the sample config and parses it: "PATH: VALUE" sets a field (VALUE
// in YAML), "+ TEXT" appends TEXT to the document. The result is the first problem,
// written as scorectl config validate writes it without its line; every problem must have a
// line.
func configMessage(t *testing.T, input string) string {
	var doc []byte
	if text, ok := strings.CutPrefix(input, "+ "); ok {
		doc = append(sampleConfig(t), []byte(strings.ReplaceAll(text, `\n`, "\n")+"\n")...)
	} else {
		path, value, _ := strings.Cut(input, ": ")
		var root map[string]any
		if err := yaml.Unmarshal(sampleConfig(t), &root); err != nil {
			t.Fatal(err)
		}
		var v any
		if err := yaml.Unmarshal([]byte(value), &v); err != nil {
			t.Fatalf("value %q: %v", value, err)
		}
		setPath(t, root, path, v)
		var err error
		if doc, err = yaml.Marshal(root); err != nil {
			t.Fatal(err)
		}
	}
	_, err := orchconfig.Parse(doc)
	inv, ok := err.(*orchconfig.InvalidError)
	if !ok {
		return fmt.Sprintf("(no InvalidError: %v)", err)
	}
	for _, fe := range inv.Errors {
		if fe.Line <= 0 {
			t.Errorf("%s has no line", fe)
		}
	}
	first := inv.Errors[0]
	first.Line = 0
	return first.String()
}

// setPath sets a field such as profiles[0].backends[0].version in a decoded document.
func setPath(t *testing.T, root map[string]any, path string, v any) {
	var cur any = root
	steps := strings.Split(strings.ReplaceAll(path, "[", ".["), ".")
	for i, step := range steps {
		last := i == len(steps)-1
		if idx, ok := strings.CutPrefix(step, "["); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(idx, "]"))
			list, _ := cur.([]any)
			if n >= len(list) {
				t.Fatalf("%s: index %d out of range", path, n)
			}
			if last {
				list[n] = v
				return
			}
			cur = list[n]
			continue
		}
		m, _ := cur.(map[string]any)
		if m == nil {
			t.Fatalf("%s: %s is not in a mapping", path, step)
		}
		if last {
			m[step] = v
			return
		}
		if _, ok := m[step]; !ok {
			m[step] = map[string]any{}
		}
		cur = m[step]
	}
}

// provisionerMessage runs a provisioner definition for a claim of web's resource db, and
// writes the claim's message as the provisioner controller does.
func provisionerMessage(t *testing.T, input string) string {
	var def orchconfig.Provisioner
	if err := yaml.Unmarshal([]byte(input), &def); err != nil {
		t.Fatalf("the definition is not YAML: %v", err)
	}
	in := provisioning.RunInput{Definition: def, Data: provisioning.DataInput{Identity: provisioning.NewIdentity("team-a", "web", "db", def.Type, "", ""), Source: "web"}}
	// A Secret a reference names that the run's manifests do not create: the platform's, which
	// the instance does not own.
	env := provisioning.Env{Secret: func(context.Context, provisioning.SecretRef) (provisioning.ReferencedSecret, error) {
		return provisioning.ReferencedSecret{Value: "the-platforms", HasKey: true}, nil
	}}
	_, err := provisioning.Run(context.Background(), in, env)
	if err == nil {
		return "(provisioned)"
	}
	claim := &scorev1b1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web-db"}, Spec: scorev1b1.ResourceClaimSpec{Type: def.Type}}
	return claimdecision.From(claimdecision.Observed{Claim: claim, Definition: &def, Run: &claimdecision.Run{Err: err}}).Status.Message
}

// templateMessage renders a manifests template over a one-container plan, prepares what it
// rendered as the applier does, and writes the plan's message as the runtime decides it
// (plandecision).
func templateMessage(t *testing.T, input string) string {
	spec := &scorev1b1.WorkloadPlanSpec{Projection: scorev1b1.Projection{Containers: []scorev1b1.ContainerProjection{{Name: "main"}}}}
	fromYAML(t, `{values: {containers: {main: {image: nginx}}}}`, spec)
	text := strings.ReplaceAll(input, `\n`, "\n")
	p := &scorev1b1.WorkloadPlan{Spec: *spec}
	objs, err := render.Render(render.Input{Workload: "web", Namespace: "team-a", Spec: spec, Template: render.Template{Data: []byte(text)}})
	if err != nil {
		return plandecision.From(plandecision.Observed{Plan: p, Stopped: plandecision.Render, Err: err}).Status.Message
	}
	// What the applier refuses before anything is applied: kinds, namespaces, the pod rules.
	// A HelmRelease is allowed too, for the pod rules' look into a chart's values.
	cfg := &orchconfig.Config{AllowedKinds: append(slices.Clone(orchconfig.DefaultAllowedKinds), "HelmRelease.helm.toolkit.fluxcd.io")}
	if _, err := prepare.Prepare(prepare.Input{Objects: objs, Marks: prepare.PlanMarks(p), Scope: prepare.OfflineScope, Allowed: cfg.KindAllowed}); err != nil {
		return plandecision.From(plandecision.Observed{Plan: p, Stopped: plandecision.Apply, Err: err}).Status.Message
	}
	return "(rendered)"
}

// exposureMessage is why the orchestrator does not mirror a URL a runtime published.
func exposureMessage(t *testing.T, input string) string {
	if err := mirror.ValidateURL(input); err != nil {
		return err.Error()
	}
	return "(mirrored)"
}

// conflictMessage renders two Workloads (a YAML list, named by their metadata, in namespace
// team-a) under the sample config and the default templates, as the runtime would, and
// returns the second's Ready reason and message with its plan's message when one of its
// objects is also the first's.
func conflictMessage(t *testing.T, input string, admit func(*scorev1b1.Workload) error) string {
	var pair []*scorev1b1.Workload
	fromYAML(t, input, &pair)
	if len(pair) != 2 {
		t.Fatalf("the input is two Workloads, not %d", len(pair))
	}
	for _, w := range pair {
		if err := admit(w); err != nil {
			return err.Error()
		}
	}
	cfg, err := orchconfig.Parse(sampleConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	template := func(ref scorev1b1.TemplateRef) (render.Template, error) {
		parsed, err := orchconfig.ParseRef(ref.Ref)
		if err != nil {
			return render.Template{}, err
		}
		b, err := os.ReadFile("config/templates/" + parsed.Key)
		return render.Template{Data: b}, err
	}
	rendered := make([]map[string]bool, 2)
	var second []string
	for i, w := range pair {
		w.Namespace = "team-a"
		results, err := offline.Run(context.Background(), offline.Input{Workloads: []*scorev1b1.Workload{w}, Config: cfg, Template: template})
		if err != nil {
			t.Fatalf("%s: %v", w.Name, err)
		}
		rendered[i] = map[string]bool{}
		for _, m := range results[0].Copies[0].Objects {
			id := m.GetKind() + "/" + m.GetName()
			rendered[i][id] = true
			if i == 1 {
				second = append(second, id)
			}
		}
	}
	for _, id := range second {
		if rendered[0][id] {
			kind, name, _ := strings.Cut(id, "/")
			c := workloadstatus.ObjectConflict()
			return fmt.Sprintf("%s: %s (the plan: %s)", c.Reason, c.Message, apply.ConflictMessage(kind, name, "uid-of-"+pair[0].Name, pair[0].Name))
		}
	}
	return "(no object in common)"
}
