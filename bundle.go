// Package scoreorchestrator carries the repository's shipped content into the binaries that
// need it: the kinds, the sample Orchestrator Config, the development provisioner catalog,
// the default templates, the controllers' roles, the examples and the local-cluster scripts.
// `scorectl dev up` installs them on a machine that has the binary only.
package scoreorchestrator

import "embed"

// Bundle is the shipped content, under the same paths as in the repository.
//
//go:embed config examples hack/tools.sh hack/cluster.sh
var Bundle embed.FS
