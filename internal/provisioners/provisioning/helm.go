package provisioning

import (
	"errors"
	"fmt"
	"text/template"

	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/helm"
	"github.com/score-orchestrator/score-orchestrator/internal/templating/yamltemplate"
)

// RenderHelm renders a helm:// definition's chart: its release and values templates over
// data (after RenderTemplates, so .Init and .State are set), then the chart with the Helm
// SDK, client-only, into the instance's namespace. It returns the chart's objects, to apply
// with the definition's own manifests.
func RenderHelm(def orchconfig.Provisioner, data Data, chart []byte) ([]map[string]any, error) {
	return RenderHelmWith(nil, def, data, chart)
}

// RenderHelmWith is RenderHelm with overrides in place of functions of the provisioner set
// (offline rendering).
func RenderHelmWith(funcs template.FuncMap, def orchconfig.Provisioner, data Data, chart []byte) ([]map[string]any, error) {
	if def.Helm == nil {
		return nil, errors.New("the definition has no helm block")
	}
	release, err := render(funcs, "helm.release", def.Helm.Release, data)
	if err != nil {
		return nil, err
	}
	name, ok := release.(string)
	if !ok || name == "" {
		return nil, fmt.Errorf("helm.release must render a name, rendered %v", release)
	}
	values, err := renderMap(funcs, "helm.values", def.Helm.Values, data)
	if err != nil {
		return nil, err
	}
	stream, err := helm.Render(helm.Input{Chart: chart, ReleaseName: name, Namespace: data.Namespace, Values: values})
	if err != nil {
		return nil, fmt.Errorf("chart %s: %w", def.Helm.Chart, err)
	}
	docs, err := yamltemplate.Decode(stream)
	if err != nil {
		return nil, fmt.Errorf("chart %s renders invalid YAML: %w", def.Helm.Chart, err)
	}
	var out []map[string]any
	for _, doc := range docs {
		if m, ok := doc.(map[string]any); ok && len(m) > 0 {
			out = append(out, m)
		}
	}
	if err := CheckManifests(out); err != nil {
		return nil, fmt.Errorf("chart %s: %w", def.Helm.Chart, err)
	}
	return out, nil
}
