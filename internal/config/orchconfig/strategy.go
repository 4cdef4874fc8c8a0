package orchconfig

import (
	"errors"
	"fmt"
	"strings"
)

// Strategy is how a provisioner definition provisions, named by its uri's scheme. The
// config's validator accepts these schemes; internal/provisioners/provisioning runs them.
type Strategy string

// The strategies.
const (
	// StrategyTemplate renders the definition's templates (score-k8s's template://).
	StrategyTemplate Strategy = "template"
	// StrategyHelm renders the templates, then the definition's chart.
	StrategyHelm Strategy = "helm"
	// StrategyRunnable renders the templates and stamps their one object as an immutable run.
	StrategyRunnable Strategy = "runnable"
	// StrategyCmd runs a command with score-k8s's JSON contract (score-k8s's cmd://).
	StrategyCmd Strategy = "cmd"
	// StrategyAPI provisions through an external HTTP API, one request per pass.
	StrategyAPI Strategy = "http+api"
)

// LocalEnvScheme is score-compose's local-env://: outputs read from the developer's shell
// environment when a Compose file is generated. The config accepts such a definition, so
// that score-compose's provisioner files load unchanged, and it serves no claim: a control
// plane lends tenants no environment of its own (a platform serves that type with a
// definition of its values).
const LocalEnvScheme = "local-env"

// ErrUnknownStrategy is a provisioner definition whose scheme no strategy serves.
var ErrUnknownStrategy = errors.New("no strategy serves this scheme")

// StrategyOf parses a definition's URI once: its strategy, or ErrUnknownStrategy.
func StrategyOf(uri string) (Strategy, error) {
	scheme, _, _ := strings.Cut(uri, "://")
	if s := Strategy(scheme); s.Known() {
		return s, nil
	}
	return "", fmt.Errorf("%w: %s uses the %s strategy", ErrUnknownStrategy, uri, scheme)
}

// Known reports whether a strategy serves the scheme s: the config's validator accepts only
// these.
func (s Strategy) Known() bool {
	switch s {
	case StrategyTemplate, StrategyHelm, StrategyRunnable, StrategyCmd, StrategyAPI:
		return true
	}
	return false
}

// Pure reports whether the strategy is a function of the definition, its data and (helm) its
// chart alone: it runs the same in the controller and offline.
func (s Strategy) Pure() bool {
	return s == StrategyTemplate || s == StrategyHelm || s == StrategyRunnable
}
