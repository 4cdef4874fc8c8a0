package orchconfig

import (
	"fmt"
	"io/fs"

	"sigs.k8s.io/yaml"
)

// AppendProvisioners returns the config document base with the provisioner definitions of
// score-k8s provisioner files (each a YAML list) appended to its provisioners, in order.
// The result is validated as the orchestrator validates it.
func AppendProvisioners(base []byte, provisionerFiles ...[]byte) ([]byte, error) {
	var doc map[string]any
	if err := yaml.Unmarshal(base, &doc); err != nil {
		return nil, fmt.Errorf("the base config: %w", err)
	}
	provs, _ := doc["provisioners"].([]any)
	for i, f := range provisionerFiles {
		var list []any
		if err := yaml.Unmarshal(f, &list); err != nil {
			return nil, fmt.Errorf("provisioner file %d: %w", i+1, err)
		}
		provs = append(provs, list...)
	}
	doc["provisioners"] = provs
	out, err := yaml.Marshal(doc)
	if err != nil {
		return nil, err
	}
	if _, err := Parse(out); err != nil {
		return nil, err
	}
	return out, nil
}

// DevelopmentConfig is the development Orchestrator Config, as make dev loads it: the sample
// profiles (config/samples/orchestrator-config.yaml) plus every provisioner file of the
// catalog (config/provisioners/*.yaml), read from a tree laid out as the repository.
func DevelopmentConfig(tree fs.FS) ([]byte, error) {
	base, err := fs.ReadFile(tree, "config/samples/orchestrator-config.yaml")
	if err != nil {
		return nil, err
	}
	catalog, err := fs.Glob(tree, "config/provisioners/*.yaml")
	if err != nil {
		return nil, err
	}
	var files [][]byte
	for _, f := range catalog {
		raw, err := fs.ReadFile(tree, f)
		if err != nil {
			return nil, err
		}
		files = append(files, raw)
	}
	return AppendProvisioners(base, files...)
}
