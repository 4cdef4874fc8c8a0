package provisioning

import (
	"encoding/base64"
	"encoding/json"
	"sort"
	"text/template"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/compose"
	"github.com/score-orchestrator/score-orchestrator/internal/templating/yamltemplate"
)

// composeManifest renders a definition's Compose templates (score-compose's services,
// volumes, networks and files) over data, checks them (compose.ParseFragment) and returns
// the Secret that carries them to the Docker agent of the namespace: a Secret, since a
// service's environment holds the instance's passwords.
func composeManifest(funcs template.FuncMap, def orchconfig.Provisioner, data Data) (map[string]any, error) {
	rendered := map[string]map[string]any{}
	for _, f := range []struct{ name, text string }{{"services", def.Services}, {"volumes", def.Volumes}, {"networks", def.Networks}, {"files", def.Files}} {
		m, err := renderMap(funcs, f.name, f.text, data)
		if err != nil {
			return nil, err
		}
		rendered[f.name] = m
	}
	if len(rendered["networks"]) > 0 {
		return nil, yamltemplate.OutputErrorf("networks template: the Docker runtime runs a namespace's services on the namespace's network, and makes no other")
	}
	fragment, err := compose.ParseFragment(rendered["services"], rendered["volumes"], rendered["files"])
	if err != nil {
		return nil, yamltemplate.OutputErrorf("compose templates: %w", err)
	}
	doc, err := json.Marshal(fragment)
	if err != nil {
		return nil, err
	}
	return map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": scorev1b1.ComposeSecretName(data.Instance), "labels": map[string]any{scorev1b1.LabelComposeFragment: "true"}},
		"type":     "score.dev/compose-fragment",
		"data":     map[string]any{scorev1b1.ComposeFragmentKey: base64.StdEncoding.EncodeToString(doc)},
	}, nil
}

// composePlainOutputs are the outputs of score-compose's definitions that say where an
// instance is and what it is called, never how to get in.
var composePlainOutputs = map[string]bool{"host": true, "hostname": true, "port": true, "name": true, "database": true, "username": true, "type": true, "source": true}

// composeSecretOutputs are the outputs of a definition in score-compose's format kept in the
// claim's outputs Secret: Compose has no Secrets, so its definitions print passwords (and
// connection strings holding them) as plain outputs; all but composePlainOutputs are kept as
// secrets.
func composeSecretOutputs(plain map[string]any) []string {
	var out []string
	for k := range plain {
		if !composePlainOutputs[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
