// Command assemble-config writes an Orchestrator Config made of a base document and the
// provisioner definitions of one or more score-k8s provisioner files, validated as the
// orchestrator validates it:
//
//	go run ./hack/assemble-config BASE.yaml PROVISIONERS.yaml... > config.yaml
package main

import (
	"fmt"
	"os"

	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
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
	var files [][]byte
	for _, f := range provisionerFiles {
		raw, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		files = append(files, raw)
	}
	out, err := orchconfig.AppendProvisioners(data, files...)
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(out)
	return err
}
