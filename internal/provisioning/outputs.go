package provisioning

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/score-orchestrator/score-orchestrator/internal/placeholder"
	"github.com/score-orchestrator/score-orchestrator/internal/tplfuncs"
)

// SecretRef names one key of a Secret in the claim's namespace.
type SecretRef struct{ Name, Key string }

// secretRefPattern is score-k8s's encoding "🔐💬<secret>_<key>💬🔐". Secret names cannot hold
// "_", so the first "_" separates the name from the key.
var secretRefPattern = regexp.MustCompile(regexp.QuoteMeta(tplfuncs.SecretRefPrefix) + `([a-z0-9.-]+)_(.+?)` + regexp.QuoteMeta(tplfuncs.SecretRefSuffix))

// SplitOutputs separates the outputs that hold secret references from the rest. A secret
// output's value is resolved (every reference replaced by the referenced value) so that it
// can be stored in the claim's own outputs Secret; a non-string secret output is stored as
// JSON. Plain outputs are returned as they are.
func SplitOutputs(outputs map[string]any, lookup func(SecretRef) (string, error)) (plain map[string]any, secret map[string]string, err error) {
	plain, secret = map[string]any{}, map[string]string{}
	keys := make([]string, 0, len(outputs))
	for k := range outputs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := outputs[k]
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, nil, fmt.Errorf("output %q: %w", k, err)
		}
		if !strings.Contains(string(raw), tplfuncs.SecretRefPrefix) {
			plain[k] = v
			continue
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

// resolveRefs replaces every secret reference in the strings inside v by its value.
func resolveRefs(v any, lookup func(SecretRef) (string, error)) (any, error) {
	return placeholder.MapStrings(v, func(x string) (string, error) {
		var firstErr error
		out := secretRefPattern.ReplaceAllStringFunc(x, func(m string) string {
			parts := secretRefPattern.FindStringSubmatch(m)
			val, err := lookup(SecretRef{Name: parts[1], Key: parts[2]})
			if err != nil && firstErr == nil {
				firstErr = err
			}
			return val
		})
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
