// Command assemble-config writes an Orchestrator Config made of a base document and the
// provisioner definitions of one or more score-k8s provisioner files, validated as the
// orchestrator validates it:
//
//	go run ./hack/assemble-config BASE.yaml PROVISIONERS.yaml... > config.yaml
package main

import (
	"fmt"
	"os"

	"sigs.k8s.io/yaml"

	"github.com/score-orchestrator/score-orchestrator/internal/orchconfig"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: assemble-config BASE.yaml [PROVISIONERS.yaml...]")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "assemble-config:", err)
		os.Exit(1)
	}
}

func run(base string, provisionerFiles []string) error {
	data, err := os.ReadFile(base)
	if err != nil {
		return err
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("%s: %w", base, err)
	}
	provs, _ := doc["provisioners"].([]any)
	for _, f := range provisionerFiles {
		raw, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var list []any
		if err := yaml.Unmarshal(raw, &list); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		provs = append(provs, list...)
	}
	doc["provisioners"] = provs
	out, err := yaml.Marshal(doc)
	if err != nil {
		return err
	}
	if _, err := orchconfig.Parse(out); err != nil {
		return err
	}
	_, err = os.Stdout.Write(out)
	return err
}
