package orchconfig

import (
	"fmt"

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
