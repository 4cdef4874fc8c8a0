package orchconfig

import (
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// MatchesLabels reports whether the selector's matchLabels and matchExpressions (ANDed) match
// a label set. Namespaces are not considered.
func (s Selector) MatchesLabels(set map[string]string) bool {
	ls := labels.Set(set)
	for k, v := range s.MatchLabels {
		if !ls.Has(k) || ls[k] != v {
			return false
		}
	}
	for _, e := range s.MatchExpressions {
		op := map[string]selection.Operator{
			"In": selection.In, "NotIn": selection.NotIn, "Exists": selection.Exists, "DoesNotExist": selection.DoesNotExist,
		}[e.Operator]
		req, err := labels.NewRequirement(e.Key, op, e.Values)
		if err != nil || !req.Matches(ls) {
			return false
		}
	}
	return true
}
