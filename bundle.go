// Package scoreorchestrator carries the repository's shipped content into the binaries that
// need it: the kinds, the sample Orchestrator Config, the development provisioner catalog,
// the default templates, the controllers' roles, the examples and the local-cluster scripts
// (`scorectl dev up` installs them on a machine that has the binary only), and the version.
package scoreorchestrator

import "embed"

// Bundle is the shipped content, under the same paths as in the repository.
//
//go:embed config examples hack/tools.sh hack/cluster.sh
var Bundle embed.FS

// Version is the file VERSION: the release this tree is, or is on its way to (docs/upgrading.md).
// It is the one source of the version: internal/version reports it, make generate writes it
// into the chart and the kustomize base, make images and make release tag the images with it.
// A binary that does not use Bundle carries these few bytes only (the linker drops Bundle).
//
//go:embed VERSION
var Version string
