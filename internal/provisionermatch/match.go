// Package provisionermatch finds the provisioner definition that serves a claim: among
// definitions whose type, class and id match (score-k8s's first-match rules: an unset class
// or id matches any), one whose matchParams equal the claim's params beats one whose
// matchParams are a subset of them, which beats one without matchParams; ties go to the
// first in document order. It is pure.
package provisionermatch

import (
	"reflect"

	"github.com/score-orchestrator/score-orchestrator/internal/orchconfig"
)

// Claim is what a claim asks for.
type Claim struct {
	Type, Class, ID string
	Params          map[string]any
}

// Match returns the index of the provisioner that serves c, or -1.
func Match(provisioners []orchconfig.Provisioner, c Claim) int {
	best, bestTier := -1, 0
	for i, p := range provisioners {
		if p.Type != c.Type || (p.Class != nil && *p.Class != c.Class) || (p.ID != nil && *p.ID != c.ID) {
			continue
		}
		tier := paramsTier(p.MatchParams, c.Params)
		if tier > bestTier {
			best, bestTier = i, tier
		}
	}
	return best
}

// Tiers: 3 exact params match, 2 subset match, 1 no matchParams, 0 no match.
func paramsTier(match, params map[string]any) int {
	if len(match) == 0 {
		return 1
	}
	for k, v := range match {
		pv, ok := params[k]
		if !ok || !reflect.DeepEqual(normalize(pv), normalize(v)) {
			return 0
		}
	}
	if len(match) == len(params) {
		return 3
	}
	return 2
}

// normalize makes YAML and JSON numbers comparable.
func normalize(v any) any {
	switch x := v.(type) {
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case int32:
		return float64(x)
	}
	return v
}
