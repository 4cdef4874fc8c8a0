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

// LabelSelector returns the selector as a Kubernetes label selector (the shape of a
// NetworkPolicy's namespaceSelector) selecting what MatchesLabels matches: matchLabels and
// matchExpressions.
func (s Selector) LabelSelector() map[string]any {
	out := map[string]any{}
	if len(s.MatchLabels) > 0 {
		ml := map[string]any{}
		for k, v := range s.MatchLabels {
			ml[k] = v
		}
		out["matchLabels"] = ml
	}
	var exprs []any
	for _, e := range s.MatchExpressions {
		expr := map[string]any{"key": e.Key, "operator": e.Operator}
		if len(e.Values) > 0 {
			values := make([]any, len(e.Values))
			for i, v := range e.Values {
				values[i] = v
			}
			expr["values"] = values
		}
		exprs = append(exprs, expr)
	}
	if len(exprs) > 0 {
		out["matchExpressions"] = exprs
	}
	return out
}
