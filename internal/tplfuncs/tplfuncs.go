// Package tplfuncs holds the template function sets. Provisioner templates get sprig plus
// score-k8s's encodeSecretRef, exactly as score-k8s offers them, so its provisioner files run
// unchanged.
package tplfuncs

import (
	"crypto/sha256"
	"fmt"
	"text/template"

	"github.com/Masterminds/sprig/v3"
)

// SecretRefPrefix and SecretRefSuffix enclose a score-k8s secret reference
// "🔐💬<secret>_<key>💬🔐" in a provisioner output.
const (
	SecretRefPrefix = "🔐💬"
	SecretRefSuffix = "💬🔐"
)

// EncodeSecretRef returns the score-k8s encoding of a reference to key in Secret secret.
func EncodeSecretRef(secret, key string) string {
	return fmt.Sprintf("%s%s_%s%s", SecretRefPrefix, secret, key, SecretRefSuffix)
}

// Waiting is what a provisioner template's waitFor returns: the claim waits for what it names
// (another Workload to be deployed, say), instead of failing. Whatever it waits for must bring
// the claim back when it happens; a Workload's creation or change does.
type Waiting struct {
	For string
}

func (w *Waiting) Error() string { return "waiting for " + w.For }

// Provisioner returns the function set of provisioner templates: sprig's text functions,
// score-k8s's encodeSecretRef, and waitFor (an addition: the claim waits instead of failing).
// sprig's env and expandenv would read the controller's own environment, which may hold its
// credentials, into objects a tenant can read; they fail instead (no score-k8s provisioner file
// uses them).
func Provisioner() template.FuncMap {
	fm := sprig.TxtFuncMap()
	fm["encodeSecretRef"] = EncodeSecretRef
	fm["waitFor"] = func(what string) (string, error) { return "", &Waiting{For: what} }
	for _, name := range []string{"env", "expandenv"} {
		fm[name] = func(string) (string, error) {
			return "", fmt.Errorf("%s is not available: provisioner templates cannot read the controller's environment", name)
		}
	}
	return fm
}

// Deterministic replaces sprig's random functions with ones derived from seed, for offline
// rendering (scorectl render): the output is the same on every run, and what the random
// functions produce is clearly not a usable secret.
func Deterministic(fm template.FuncMap, seed string) template.FuncMap {
	n := 0
	next := func(prefix string, length int, alphabet string) string {
		n++
		sum := sha256.Sum256([]byte(fmt.Sprintf("%s/%s/%d", seed, prefix, n)))
		out := make([]byte, length)
		for i := range out {
			out[i] = alphabet[int(sum[i%len(sum)])%len(alphabet)]
		}
		return string(out)
	}
	const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	fm["randAlphaNum"] = func(l int) string { return next("alnum", l, alnum) }
	fm["randAlpha"] = func(l int) string { return next("alpha", l, alnum[:52]) }
	fm["randNumeric"] = func(l int) string { return next("num", l, alnum[52:]) }
	fm["randAscii"] = func(l int) string { return next("ascii", l, alnum) }
	fm["uuidv4"] = func() string { return next("uuid", 32, "0123456789abcdef") }
	return fm
}
