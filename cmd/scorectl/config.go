package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/termtext"
)

func newConfigCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Work with Orchestrator Config documents",
	}
	cmd.AddCommand(newConfigValidateCommand(), newConfigDiffCommand())
	return cmd
}

// fileReport is the validation result of one file, as printed with -o json.
type fileReport struct {
	File   string                  `json:"file"`
	Valid  bool                    `json:"valid"`
	Errors []orchconfig.FieldError `json:"errors,omitempty"`

	data   []byte
	config *orchconfig.Config
}

func newConfigValidateCommand() *cobra.Command {
	var (
		output string
		checks configChecks
	)
	cmd := &cobra.Command{
		Use:   "validate FILE...",
		Short: "Validate Orchestrator Config documents as the orchestrator does",
		Long: `Validate Orchestrator Config documents with the same strict parser and whole-document
validator the orchestrator runs before it accepts a config. Every problem is reported with its
line and field path. The exit code is 0 when every file is valid and 1 otherwise, so the
command fits a CI job.

A platform's CI can check more than the orchestrator can at load time:
  --templates DIR   every configmap:// template ref resolves to DIR/<key> and matches its digest
  --fetch           every oci:// template ref is fetched and matches its digest
  --workloads DIR   the Score files under DIR are sample Workloads: each must select a backend,
                    and every profile must have a backend some sample selects`,
		Example: `  scorectl config validate config/samples/orchestrator-config.yaml
  scorectl config validate -o json platform/*.yaml
  scorectl config validate platform/config.yaml --templates platform/templates --workloads examples`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "text" && output != "json" {
				return fmt.Errorf("-o must be text or json, not %q", output)
			}
			reports := make([]fileReport, 0, len(args))
			for _, path := range args {
				reports = append(reports, checks.run(cmd.Context(), validateConfigFile(path)))
			}
			if err := printReports(cmd.OutOrStdout(), reports, output); err != nil {
				return err
			}
			for _, r := range reports {
				if !r.Valid {
					return errors.New("invalid orchestrator config")
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	cmd.Flags().StringVar(&checks.templates, "templates", "", "check configmap:// template refs against the files in this directory")
	cmd.Flags().BoolVar(&checks.fetch, "fetch", false, "fetch oci:// template refs and check their digests")
	cmd.Flags().BoolVar(&checks.plainHTTP, "oci-plain-http", false, "reach OCI registries over plain HTTP")
	cmd.Flags().StringVar(&checks.workloads, "workloads", "", "directory of sample Score files every profile must serve")
	return cmd
}

// fileReport is validated and, when valid, kept with its data and config for further checks.
func validateConfigFile(path string) fileReport {
	r := fileReport{File: path}
	data, err := os.ReadFile(path)
	if err != nil {
		r.Errors = []orchconfig.FieldError{{Message: err.Error()}}
		return r
	}
	cfg, err := orchconfig.Parse(data)
	var inv *orchconfig.InvalidError
	switch {
	case errors.As(err, &inv):
		r.Errors = inv.Errors
	case err != nil:
		r.Errors = []orchconfig.FieldError{{Message: err.Error()}}
	default:
		r.Valid, r.data, r.config = true, data, cfg
	}
	return r
}

func printReports(w io.Writer, reports []fileReport, output string) error {
	if output == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(reports)
	}
	for _, r := range reports {
		if r.Valid {
			fmt.Fprintf(w, "%s: valid\n", r.File)
			continue
		}
		for _, e := range r.Errors {
			if e.Line > 0 {
				fmt.Fprintf(w, "%s:%d: ", r.File, e.Line)
			} else {
				fmt.Fprintf(w, "%s: ", r.File)
			}
			if e.Path != "" {
				fmt.Fprintf(w, "%s: ", e.Path)
			}
			fmt.Fprintln(w, termtext.Escape(e.Message))
		}
	}
	return nil
}
