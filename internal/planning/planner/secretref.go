package planner

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/values"
	"github.com/score-orchestrator/score-orchestrator/internal/templating/tplfuncs"
)

// SecretRefChars are the characters of score-k8s's secret reference, "🔐💬<secret>_<key>💬🔐",
// which the provisioner replaces in a definition's outputs with a key of a Secret. Only a
// definition may write one: a Workload's text holding either character is refused, wherever
// it could reach a definition's data (params, resource metadata, the Workload's annotations
// and labels), so that no reference a tenant spells can reach an output.
const SecretRefChars = tplfuncs.SecretRefPrefix

// SecretRefMessage says why a value holding SecretRefChars is refused.
const SecretRefMessage = "The value holds 🔐 or 💬, the characters of a secret reference (🔐💬<secret>_<key>💬🔐), which a workload may not write."

// SecretRefIn returns the path, below field, of the first key or string of v (a value decoded
// from JSON: maps, lists, strings, numbers) that holds a character of SecretRefChars, and ""
// when none does. Keys are visited in order, so the path named is always the same one.
func SecretRefIn(field string, v any) string {
	switch x := v.(type) {
	case string:
		if strings.ContainsAny(x, SecretRefChars) {
			return field
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if strings.ContainsAny(k, SecretRefChars) {
				return field + "." + k
			}
			if p := SecretRefIn(field+"."+k, x[k]); p != "" {
				return p
			}
		}
	case []any:
		for i, e := range x {
			if p := SecretRefIn(fmt.Sprintf("%s[%d]", field, i), e); p != "" {
				return p
			}
		}
	}
	return ""
}

// secretRefProblems are the Workload's values that reach a definition's data (its annotations
// and labels, as metadata, and each resource's params and metadata) and hold a character of a
// secret reference. The annotations that are not Score metadata (scoreAnnotation) reach no
// definition: kubectl's record of a client-side apply among them, whose copy of a container
// variable or file may hold the characters as the variable or file itself may.
func secretRefProblems(w *scorev1b1.Workload) []Problem {
	var out []Problem
	check := func(field, k, v string) {
		if strings.ContainsAny(k, SecretRefChars) || strings.ContainsAny(v, SecretRefChars) {
			out = append(out, Problem{Field: field + "." + k, Message: SecretRefMessage})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(w.Annotations)) {
		if scoreAnnotation(k) {
			check("metadata.annotations", k, w.Annotations[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(w.Labels)) {
		check("metadata.labels", k, w.Labels[k])
	}
	for _, key := range slices.Sorted(maps.Keys(w.Spec.Resources)) {
		res := w.Spec.Resources[key]
		for _, part := range []struct {
			name string
			raw  *apiextensionsv1.JSON
		}{{"params", res.Params}, {"metadata", res.Metadata}} {
			v, err := values.Object(part.raw)
			if err != nil {
				continue // not an object: said by CheckInputs
			}
			if p := SecretRefIn("spec.resources."+key+"."+part.name, v); p != "" {
				out = append(out, Problem{Field: p, Message: SecretRefMessage})
			}
		}
	}
	return out
}
