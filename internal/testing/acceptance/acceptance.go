// Package acceptance renders every Score file of the conformance corpus the way a score-k8s
// user would run them — the files of one sample app together — with the offline pipeline and
// the development catalog, beside score-k8s's outcome for the same files, and writes the table
// docs/acceptance.md shows. score-k8s's outcomes are recorded once (RecordedPath) by running its
// binary; a test keeps the table in step with the code. The Go module proxy does not serve score-k8s: make acceptance
// builds it from a source checkout (SCORE_K8S_SRC).
package acceptance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/offline"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/scorefile"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/render"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/templates"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/conformance"
)

// Namespace is where the corpus is rendered.
const Namespace = "acceptance"

// App is Score files a user applies together: the Workloads of one sample app, or one file.
type App struct {
	Name string
	// Files are corpus-relative paths.
	Files []string
}

// Apps groups the corpus's Score files (corpus-relative) into apps: the files of a sample
// (score/examples/samples__<app>__…), of a numbered score-compose example
// (examples__<NN-name>__…) and of a community provisioner's pair (…provisioners__score-…) are
// one app each; every other file is its own. Two files of one app that name the same Workload
// (a sample's variant) make a second app, the first app's files with the variant in place.
func Apps(corpus string, files []string) []App {
	workloadName := func(f string) string {
		results, err := scorefile.ReadFile(filepath.Join(corpus, f), scorefile.Options{})
		if err != nil || len(results) == 0 {
			return f
		}
		return results[0].Workload.Name
	}
	var order []string
	groups := map[string][]string{}
	for _, f := range files {
		key := appKey(f)
		if _, ok := groups[key]; !ok {
			order = append(order, key)
		}
		groups[key] = append(groups[key], f)
	}
	var out []App
	for _, key := range order {
		var base, variants []string
		seen := map[string]bool{}
		for _, f := range groups[key] {
			name := workloadName(f)
			if seen[name] {
				variants = append(variants, f)
				continue
			}
			seen[name] = true
			base = append(base, f)
		}
		out = append(out, App{Name: key, Files: base})
		for _, v := range variants {
			files := []string{}
			for _, f := range base {
				if workloadName(f) != workloadName(v) {
					files = append(files, f)
				}
			}
			out = append(out, App{Name: key + " (" + filepath.Base(v) + ")", Files: append(files, v)})
		}
	}
	return out
}

// appKey names the app a corpus file belongs to.
func appKey(f string) string {
	base := filepath.Base(f)
	switch {
	case strings.HasPrefix(base, "samples__") && filepath.Base(filepath.Dir(f)) == "examples":
		parts := strings.SplitN(base, "__", 3)
		return "samples/" + parts[1]
	case strings.HasPrefix(base, "examples__") && filepath.Base(filepath.Dir(f)) == "score-compose":
		parts := strings.SplitN(base, "__", 3)
		return "score-compose/" + parts[1]
	case strings.Contains(base, ".provisioners__score"):
		return "community/" + strings.SplitN(base, ".provisioners__score", 2)[0]
	default:
		return strings.TrimSuffix(f, ".yaml")
	}
}

// Row is one Workload's outcome on each side.
type Row struct {
	App, File, Workload string
	// Ours and ScoreK8s start with "✓" when the Workload renders, "✗" and the reason when not.
	Ours, ScoreK8s string
}

// Input is what Run needs.
type Input struct {
	// Corpus is the conformance corpus directory; Files its Score files, corpus-relative.
	Corpus string
	Files  []string
	Config *orchconfig.Config
	// Templates is the directory of the config's configmap:// templates.
	Templates string
	// ScoreK8s is each app's score-k8s outcome, by app name (Recorded).
	ScoreK8s map[string]string
}

// Run renders every app with the offline pipeline and returns a row per Workload, in corpus
// order.
func Run(ctx context.Context, in Input) ([]Row, error) {
	var rows []Row
	for _, app := range Apps(in.Corpus, in.Files) {
		var workloads []*scorev1b1.Workload
		from := map[*scorev1b1.Workload]string{}
		for _, f := range app.Files {
			results, err := scorefile.ReadFile(filepath.Join(in.Corpus, f), scorefile.Options{Namespace: Namespace})
			if err != nil {
				rows = append(rows, Row{App: app.Name, File: f, Ours: "✗ " + short(withoutCorpusDir(err.Error(), in.Corpus)), ScoreK8s: in.scoreK8s(app.Name)})
				continue
			}
			for _, r := range results {
				r.Workload.Generation = 1
				workloads = append(workloads, r.Workload)
				from[r.Workload] = f
			}
		}
		results, _ := offline.Run(ctx, offline.Input{Workloads: workloads, Config: in.Config, Template: func(ref scorev1b1.TemplateRef) (render.Template, error) {
			return templates.FromDir(ctx, ref, in.Templates, nil)
		}})
		for i, res := range results {
			ours := fmt.Sprintf("✓ %d objects", countObjects(res))
			if res.Err != nil {
				msg := strings.TrimPrefix(res.Err.Error(), fmt.Sprintf("workload %s/%s: ", Namespace, res.Workload.Name))
				ours = "✗ " + short(withoutCorpusDir(msg, in.Corpus))
			}
			rows = append(rows, Row{App: app.Name, File: from[workloads[i]], Workload: res.Workload.Name, Ours: ours, ScoreK8s: in.scoreK8s(app.Name)})
		}
	}
	return rows, nil
}

func (in Input) scoreK8s(app string) string {
	if s, ok := in.ScoreK8s[app]; ok {
		return s
	}
	return "not recorded"
}

func countObjects(res offline.Result) int {
	n := 0
	for _, cp := range res.Copies {
		n += len(cp.Objects)
		for _, c := range cp.Claims {
			n += len(c.Objects)
		}
	}
	return n
}

// withoutCorpusDir names the corpus's files as the page does (../shared/conformance), not by
// where this machine has the corpus: the page is the same on every clone.
func withoutCorpusDir(msg, corpus string) string {
	return strings.ReplaceAll(msg, filepath.Clean(corpus)+string(filepath.Separator), "../shared/conformance/")
}

// short is a message on one line, at most 160 characters, without table breakers.
func short(s string) string {
	s = strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", "; ")), " ")
	s = strings.ReplaceAll(s, ":;", ":")
	s = strings.ReplaceAll(s, "|", "/")
	if r := []rune(s); len(r) > 160 {
		s = string(r[:157]) + "..."
	}
	return s
}

// RunScoreK8s runs the score-k8s binary on each app, as a score-k8s user would (init with its
// default provisioners, then generate the app's files in one call), and returns each app's
// outcome: "✓" or "✗" and the last line score-k8s printed.
func RunScoreK8s(ctx context.Context, bin, corpus string, files []string) (map[string]string, error) {
	bin, err := filepath.Abs(bin) // it runs in a directory of its own
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, app := range Apps(corpus, files) {
		dir, err := os.MkdirTemp("", "score-k8s-")
		if err != nil {
			return nil, err
		}
		run := func(args ...string) (string, error) {
			cmd := exec.CommandContext(ctx, bin, args...)
			cmd.Dir = dir
			var b bytes.Buffer
			cmd.Stdout, cmd.Stderr = &b, &b
			err := cmd.Run()
			return strings.TrimSpace(b.String()), err
		}
		if msg, err := run("init", "--no-sample"); err != nil {
			return nil, fmt.Errorf("score-k8s init: %s: %w", msg, err)
		}
		args := []string{"generate", "--namespace", Namespace}
		for _, f := range app.Files {
			args = append(args, filepath.Join(corpus, f))
		}
		msg, err := run(args...)
		var exit *exec.ExitError
		switch {
		case err == nil:
			out[app.Name] = "✓"
		case errors.As(err, &exit):
			lines := strings.Split(msg, "\n")
			out[app.Name] = "✗ " + short(withoutCorpusDir(lines[len(lines)-1], corpus))
		default:
			return nil, err
		}
		_ = os.RemoveAll(dir)
	}
	return out, nil
}

// ReadRecorded reads score-k8s's recorded outcomes; WriteRecorded writes them.
func ReadRecorded(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	return out, json.Unmarshal(b, &out)
}

// WriteRecorded writes score-k8s's outcomes, keys sorted.
func WriteRecorded(path string, outcomes map[string]string) error {
	b, err := json.MarshalIndent(outcomes, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Markdown is the acceptance page: the totals, then a row per Workload.
func Markdown(rows []Row) string {
	var b strings.Builder
	ours, theirs, both := 0, 0, 0
	for _, r := range rows {
		o, t := strings.HasPrefix(r.Ours, "✓"), strings.HasPrefix(r.ScoreK8s, "✓")
		if o {
			ours++
		}
		if t {
			theirs++
		}
		if o && t {
			both++
		}
	}
	fmt.Fprintf(&b, `# Acceptance: the conformance corpus, rendered by scorectl and by score-k8s

Every Score file of the conformance corpus (`+"`../shared/conformance`"+`), the files of a sample app
together, rendered offline by `+"`scorectl render`"+`'s pipeline with the sample config and the development
catalog, and generated by score-k8s (its commit b375b95, after v0.15.0) with its default provisioners, as a user of each would.
A Workload renders (✓, with the objects the controllers would apply for it, its dependencies'
included) or not (✗, with the reason). score-k8s generates an app at once or not at all, so its
outcome is the app's. Generated by `+"`make acceptance`"+`; `+"`internal/testing/acceptance`"+`'s test keeps the
scorectl column in step with the code.

**Totals: %d Workloads; scorectl renders %d, score-k8s %d, both %d.**

| app | file | workload | scorectl | score-k8s |
|---|---|---|---|---|
`, len(rows), ours, theirs, both)
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].App < rows[j].App })
	for _, r := range rows {
		workload := r.Workload
		if workload == "" {
			workload = "-"
		}
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s | %s |\n", r.App, filepath.Base(r.File), workload, r.Ours, r.ScoreK8s)
	}
	return b.String()
}

// RecordedPath is where score-k8s's outcomes are recorded, relative to the repository.
const RecordedPath = "internal/testing/acceptance/testdata/score-k8s.json"

// Corpus is the conformance corpus directory and its Score files, corpus-relative.
func Corpus() (string, []string, error) {
	dir, err := conformance.Dir()
	if err != nil {
		return "", nil, err
	}
	abs, err := conformance.ScoreFiles()
	if err != nil {
		return "", nil, err
	}
	files := make([]string, 0, len(abs))
	for _, f := range abs {
		rel, err := filepath.Rel(dir, f)
		if err != nil {
			return "", nil, err
		}
		files = append(files, rel)
	}
	return dir, files, nil
}

// Page is docs/acceptance.md as the code and the recorded score-k8s outcomes make it, for the
// repository at root.
func Page(ctx context.Context, root string) (string, error) {
	corpus, files, err := Corpus()
	if err != nil {
		return "", err
	}
	doc, err := orchconfig.DevelopmentConfig(os.DirFS(root))
	if err != nil {
		return "", err
	}
	cfg, err := orchconfig.Parse(doc)
	if err != nil {
		return "", err
	}
	recorded, err := ReadRecorded(filepath.Join(root, RecordedPath))
	if err != nil {
		return "", err
	}
	rows, err := Run(ctx, Input{Corpus: corpus, Files: files, Config: cfg, Templates: filepath.Join(root, "config", "templates"), ScoreK8s: recorded})
	if err != nil {
		return "", err
	}
	return Markdown(rows), nil
}
