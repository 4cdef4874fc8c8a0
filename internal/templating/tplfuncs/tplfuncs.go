// Package tplfuncs holds the template function sets. Provisioner templates get sprig plus
// score-k8s's encodeSecretRef, exactly as score-k8s offers them, so its provisioner files run
// unchanged.
package tplfuncs

import (
	"crypto/sha256"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"text/template"

	"github.com/Masterminds/sprig/v3"

	"github.com/score-orchestrator/score-orchestrator/internal/templating/yamltemplate"
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

// Deterministic returns stand-ins for sprig's random functions derived from seed, for offline
// rendering (scorectl render): the output is the same on every run, and what the random
// functions produce is clearly not a usable secret. They replace the provisioner set's (see
// Parse).
func Deterministic(seed string) template.FuncMap {
	fm := template.FuncMap{}
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

// parsed caches provisioner templates by name and text: parsing, and copying sprig's two
// hundred functions into every template, was most of a provisioning run (scorectl render of
// 100 Score files; every claim pass of the provisioner).
var parsed = struct {
	sync.Mutex
	m map[[2]string]*template.Template
}{m: map[[2]string]*template.Template{}}

// maxParsed bounds the cache; a config holds far fewer templates, and a new config's replace
// the old ones over time.
const maxParsed = 1024

// Parse returns a provisioner template (the Provisioner function set, options as given) parsed
// once per name and text, with overrides in place of functions of the set (Deterministic's):
// a clone then, so the shared template is never changed. The result is safe to execute
// concurrently.
func Parse(name, text string, overrides template.FuncMap, options ...string) (*template.Template, error) {
	return parse(name, text, false, overrides, options...)
}

// ParseYAML is Parse for a template whose output is YAML: guarded (yamltemplate), so that
// whatever its actions print is only ever a value once yamltemplate.Decode reads the output.
func ParseYAML(name, text string, overrides template.FuncMap) (*template.Template, error) {
	return parse(name, text, true, overrides)
}

func parse(name, text string, guarded bool, overrides template.FuncMap, options ...string) (*template.Template, error) {
	key := [2]string{name + "\x00" + strings.Join(options, ",") + "\x00" + strconv.FormatBool(guarded), text}
	parsed.Lock()
	t, ok := parsed.m[key]
	parsed.Unlock()
	if !ok {
		var err error
		if t, err = template.New(name).Funcs(provisionerFuncs()).Option(options...).Parse(text); err != nil {
			return nil, err
		}
		if guarded {
			// Added after parsing, so that a template cannot call them itself.
			if err := yamltemplate.Guard(t.Funcs(yamltemplate.Funcs()), yamltemplate.Sprig); err != nil {
				return nil, err
			}
		}
		parsed.Lock()
		if len(parsed.m) >= maxParsed {
			parsed.m = map[[2]string]*template.Template{}
		}
		parsed.m[key] = t
		parsed.Unlock()
	}
	if len(overrides) == 0 {
		return t, nil
	}
	c, err := t.Clone()
	if err != nil {
		return nil, err
	}
	return c.Funcs(overrides), nil
}

// provisionerFuncs is the Provisioner set, built once (sprig builds its map anew each call).
var provisionerFuncs = sync.OnceValue(Provisioner)
