package provisioning

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/score-orchestrator/score-orchestrator/internal/templating/placeholder"
	"github.com/score-orchestrator/score-orchestrator/internal/templating/tplfuncs"
)

// SecretRef names one key of a Secret in the instance's namespace.
type SecretRef struct{ Name, Key string }

// SplitOutputs separates the outputs that hold secret references from the rest. A secret
// output's value is resolved (every reference replaced by the referenced value, read with
// lookup) so that it can be stored in the claim's own outputs Secret; a non-string secret
// output is stored as JSON. Plain outputs are returned as they are. Only references the run
// made resolve (secretref.go): an output that holds another is refused (ErrReferenceRefused),
// and so is one whose reference does not name a Secret.
func SplitOutputs(outputs map[string]any, lookup func(SecretRef) (string, error)) (plain map[string]any, secret map[string]string, err error) {
	plain, secret = map[string]any{}, map[string]string{}
	keys := make([]string, 0, len(outputs))
	for k := range outputs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	made := madePrefix()
	for _, k := range keys {
		v := outputs[k]
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, nil, fmt.Errorf("output %q: %w", k, err)
		}
		refs := strings.Count(string(raw), tplfuncs.SecretRefPrefix)
		switch {
		case refs == 0:
			plain[k] = v
			continue
		case refs > strings.Count(string(raw), made):
			return nil, nil, fmt.Errorf("%w: output %s holds a secret reference the definition did not make, text that came from its data (a param, metadata, the state, an API's answer, a run's outputs), which is never resolved", ErrReferenceRefused, k)
		}
		resolved, err := resolveRefs(v, lookup)
		if err != nil {
			return nil, nil, fmt.Errorf("output %q: %w", k, err)
		}
		if s, ok := resolved.(string); ok {
			secret[k] = s
		} else {
			b, _ := json.Marshal(resolved)
			secret[k] = string(b)
		}
	}
	return plain, secret, nil
}

// resolveRefs replaces every reference the run made in the strings inside v by its value.
func resolveRefs(v any, lookup func(SecretRef) (string, error)) (any, error) {
	pattern, made := madePattern(), madePrefix()
	return placeholder.MapStrings(v, func(x string) (string, error) {
		var firstErr error
		out := pattern.ReplaceAllStringFunc(x, func(m string) string {
			parts := pattern.FindStringSubmatch(m)
			val, err := lookup(SecretRef{Name: parts[1], Key: parts[2]})
			if err != nil && firstErr == nil {
				firstErr = err
			}
			return val
		})
		if firstErr == nil && strings.Contains(out, made) {
			// Resolved values never hold the mark: a reference is left that names no Secret.
			firstErr = errors.New("a secret reference does not name a Secret and a key (🔐💬<secret>_<key>💬🔐, the Secret's name in lower case)")
		}
		return out, firstErr
	})
}

// SecretsInManifests returns a lookup over the Secrets a run's manifests create, so that
// references to them resolve without reading the cluster.
func SecretsInManifests(manifests []map[string]any) map[SecretRef]string {
	out := map[SecretRef]string{}
	for _, m := range manifests {
		if m["kind"] != "Secret" || m["apiVersion"] != "v1" {
			continue
		}
		meta, _ := m["metadata"].(map[string]any)
		name, _ := meta["name"].(string)
		if data, ok := m["data"].(map[string]any); ok {
			for k, v := range data {
				if s, ok := v.(string); ok {
					if dec, err := base64.StdEncoding.DecodeString(s); err == nil {
						out[SecretRef{name, k}] = string(dec)
					}
				}
			}
		}
		if data, ok := m["stringData"].(map[string]any); ok {
			for k, v := range data {
				out[SecretRef{name, k}] = fmt.Sprint(v)
			}
		}
	}
	return out
}

// MissingOutputs lists the expected outputs that were not produced.
func MissingOutputs(expected []string, plain map[string]any, secret map[string]string) []string {
	var missing []string
	for _, k := range expected {
		if _, ok := plain[k]; ok {
			continue
		}
		if _, ok := secret[k]; ok {
			continue
		}
		missing = append(missing, k)
	}
	return missing
}
