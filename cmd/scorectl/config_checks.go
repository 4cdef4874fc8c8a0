package main

import (
	"context"
	"fmt"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/selection"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/ocifetch"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/templates"
)

// configChecks are what a platform's CI checks beyond the orchestrator's own validation.
type configChecks struct {
	templates, workloads string
	fetch, plainHTTP     bool
}

// run adds the checks' problems to a valid report, each with its line.
func (c configChecks) run(ctx context.Context, r fileReport) fileReport {
	if !r.Valid {
		return r
	}
	var problems []orchconfig.FieldError
	problems = append(problems, c.templateRefs(ctx, r.config)...)
	problems = append(problems, c.samples(r.config)...)
	for i := range problems {
		problems[i].Line = orchconfig.LineOf(r.data, problems[i].Path)
	}
	if len(problems) > 0 {
		r.Valid, r.Errors = false, problems
	}
	return r
}

// templateRefs resolves every backend's template ref and checks it against its digest:
// configmap refs from the templates directory, oci refs by fetching them.
func (c configChecks) templateRefs(ctx context.Context, cfg *orchconfig.Config) []orchconfig.FieldError {
	if c.templates == "" && !c.fetch {
		return nil
	}
	fetcher := &ocifetch.Fetcher{PlainHTTP: c.plainHTTP}
	var out []orchconfig.FieldError
	for i, p := range cfg.Profiles {
		for j, b := range p.Backends {
			ref, err := orchconfig.ParseRef(b.Template.Ref)
			if err != nil {
				continue // reported by validation
			}
			if ref.Scheme == orchconfig.RefConfigMap && c.templates == "" || ref.Scheme == orchconfig.RefOCI && !c.fetch {
				continue
			}
			tr := scorev1b1.TemplateRef{Kind: scorev1b1.TemplateKind(b.Template.Kind), Ref: b.Template.Ref, Digest: b.Template.Digest}
			if _, err := templates.FromDir(ctx, tr, c.templates, fetcher); err != nil {
				out = append(out, orchconfig.FieldError{Path: fmt.Sprintf("profiles[%d].backends[%d].template.ref", i, j), Message: fmt.Sprintf("does not resolve: %v", err)})
			}
		}
	}
	return out
}

// samples selects a backend for every sample Workload, and reports samples that get none and
// profiles that no sample reaches.
func (c configChecks) samples(cfg *orchconfig.Config) []orchconfig.FieldError {
	if c.workloads == "" {
		return nil
	}
	workloads, err := readWorkloads([]string{c.workloads}, "default", "")
	if err != nil {
		return []orchconfig.FieldError{{Path: "profiles", Message: fmt.Sprintf("reading the sample workloads: %v", err)}}
	}
	sel, err := selection.New(cfg)
	if err != nil {
		return []orchconfig.FieldError{{Path: "profiles", Message: err.Error()}}
	}
	served := map[string]bool{}
	var out []orchconfig.FieldError
	for _, w := range workloads {
		res := sel.Select(selection.Input{Workload: w})
		if !res.OK {
			out = append(out, orchconfig.FieldError{Path: "profiles", Message: fmt.Sprintf("sample workload %s gets no backend: %s", w.Name, res.Message)})
			continue
		}
		served[res.Profile] = true
	}
	for i, p := range cfg.Profiles {
		if !served[p.Name] {
			out = append(out, orchconfig.FieldError{Path: fmt.Sprintf("profiles[%d]", i), Message: fmt.Sprintf("no sample workload selects a backend of profile %s", p.Name)})
		}
	}
	return out
}
