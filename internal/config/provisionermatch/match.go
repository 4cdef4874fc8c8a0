// Package provisionermatch finds the provisioner definition that serves a claim: among
// definitions whose type, class and id match (score-k8s's first-match rules: an unset class
// or id matches any), one whose matchParams equal the claim's params beats one whose
// matchParams are a subset of them, which beats one without matchParams; ties go to the
// first in document order. Resolve first settles the claim's class (the type's default class
// when it names none) and merges the class's params under the claim's. It is pure.
package provisionermatch

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
)

// Claim is what a claim asks for, and the runtime its Workload runs on ("" is kubernetes):
// only definitions that can realise it there serve it (orchconfig.Provisioner.ServesRuntime),
// and on a Docker host a Compose definition first.
type Claim struct {
	Type, Class, ID string
	Params          map[string]any
	RuntimeClass    string
}

// Match returns the index of the provisioner that serves c, or -1.
func Match(provisioners []orchconfig.Provisioner, c Claim) int {
	best, bestTier := -1, 0
	for i, p := range provisioners {
		if p.Type != c.Type || (p.Class != nil && *p.Class != c.Class) || (p.ID != nil && *p.ID != c.ID) || !p.ServesRuntime(c.RuntimeClass) {
			continue
		}
		tier := paramsTier(p.MatchParams, c.Params)
		if tier > 0 && p.EmitsCompose() {
			// Beside a Docker Workload, its services run on its host, where it reaches them:
			// a Compose definition beats any other, whatever their params.
			tier += composeTier
		}
		if tier > bestTier {
			best, bestTier = i, tier
		}
	}
	return best
}

// Tiers: 3 exact params match, 2 subset match, 1 no matchParams, 0 no match; a Compose
// definition (which serves Docker claims only) composeTier more.
const composeTier = 10

// paramsTier is a definition's tier by its matchParams.
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

// Input is what Resolve looks at: the config's classes and provisioners, and the claim.
type Input struct {
	Classes      []orchconfig.Class
	Provisioners []orchconfig.Provisioner
	Claim        Claim
}

// Result is how a claim is served.
type Result struct {
	// Index is the serving provisioner's index in Provisioners.
	Index int
	// Class is the claim's class, or the type's default class when it names none ("" when
	// neither).
	Class string
	// Params are the class's params with the claim's merged over them.
	Params map[string]any
	// DeprovisionPolicy is the class's default policy, else the provisioner's ("" when
	// neither sets one).
	DeprovisionPolicy string
}

// Resolve settles the claim's class, merges its params and finds the provisioner that serves
// it. When it cannot, message says why in one sentence: the class is not one the type
// declares (listing those it does), or no provisioner serves the claim (listing the types
// that are served).
func Resolve(in Input) (res Result, message string, ok bool) {
	c := in.Claim
	var class *orchconfig.Class
	var declared []string
	for i := range in.Classes {
		k := &in.Classes[i]
		if k.Type != c.Type {
			continue
		}
		declared = append(declared, k.Name)
		if k.Name == c.Class || c.Class == "" && k.Default {
			class = k
		}
	}
	sort.Strings(declared)
	if class == nil && c.Class != "" && len(declared) > 0 {
		return Result{Index: -1}, fmt.Sprintf("Class %s is not a class of %s. Available classes: %s.", c.Class, c.Type, strings.Join(declared, ", ")), false
	}
	res = Result{Index: -1, Class: c.Class, Params: c.Params}
	if class != nil {
		res.Class, res.Params, res.DeprovisionPolicy = class.Name, MergeParams(class.Params, c.Params), class.DeprovisionPolicy
	}
	res.Index = Match(in.Provisioners, Claim{Type: c.Type, Class: res.Class, ID: c.ID, Params: res.Params, RuntimeClass: c.RuntimeClass})
	if res.Index < 0 {
		return res, noProvisionerMessage(in.Provisioners, Claim{Type: c.Type, Class: res.Class, ID: c.ID, RuntimeClass: c.RuntimeClass}), false
	}
	if res.DeprovisionPolicy == "" {
		res.DeprovisionPolicy = in.Provisioners[res.Index].DeprovisionPolicy
	}
	return res, "", true
}

// MergeParams returns over merged onto under, recursively for mappings: where both set a key
// to something other than two mappings, over wins.
func MergeParams(under, over map[string]any) map[string]any {
	if len(under) == 0 {
		return over
	}
	out := make(map[string]any, len(under)+len(over))
	for k, v := range under {
		out[k] = v
	}
	for k, v := range over {
		um, uok := out[k].(map[string]any)
		om, ook := v.(map[string]any)
		if uok && ook {
			out[k] = MergeParams(um, om)
			continue
		}
		out[k] = v
	}
	return out
}

func noProvisionerMessage(provisioners []orchconfig.Provisioner, c Claim) string {
	typ, class, id := c.Type, c.Class, c.ID
	types := map[string]bool{}
	elsewhere, localEnv := false, false
	for _, p := range provisioners {
		switch {
		case p.ServesRuntime(c.RuntimeClass):
			types[p.Type] = true
		case p.Type == typ && p.ReadsLocalEnv():
			localEnv = true
		case p.Type == typ:
			elsewhere = true
		}
	}
	list := make([]string, 0, len(types))
	for t := range types {
		list = append(list, t)
	}
	sort.Strings(list)
	what := typ
	if class != "" {
		what += " of class " + class
	}
	if id != "" {
		what += " with id " + id
	}
	msg := fmt.Sprintf("No provisioner serves %s. Available types: %s.", what, strings.Join(list, ", "))
	if localEnv && !elsewhere {
		msg = fmt.Sprintf("No provisioner serves %s: its definition is score-compose's local-env://, which reads a developer's shell environment, and a control plane lends none. Available types: %s.", what, strings.Join(list, ", "))
	}
	if elsewhere {
		runtime := c.RuntimeClass
		if runtime == "" {
			runtime = "kubernetes"
		}
		msg = fmt.Sprintf("No provisioner serves %s on the %s runtime: the definitions of %s realise it on another (Compose services on a Docker host, objects on a cluster). Available types: %s.", what, runtime, typ, strings.Join(list, ", "))
	}
	if near := closest(typ, list); near != "" {
		msg += fmt.Sprintf(" Did you mean %s?", near)
	}
	return msg + " A platform engineer serves a new type by adding a provisioner definition (score-k8s's provisioner file format) to the Orchestrator Config's provisioners."
}

// closest is the served type nearest to typ (by edit distance, case aside), when it is near
// enough to be a slip: at most a third of typ's letters apart, or typ with a prefix or suffix
// (postgresql for postgres). Between equally near types, the fewer edits wins.
func closest(typ string, served []string) string {
	best, bestDist, bestRaw := "", len(typ)/3+1, 0
	for _, s := range served {
		lt, ls := strings.ToLower(typ), strings.ToLower(s)
		raw := editDistance(lt, ls)
		d := raw
		if strings.HasPrefix(lt, ls) || strings.HasPrefix(ls, lt) {
			d = min(d, 1)
		}
		if d < bestDist || d == bestDist && best != "" && raw < bestRaw {
			best, bestDist, bestRaw = s, d, raw
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// Serving returns the definition that serves c under cfg (nil when none does) and how.
func Serving(cfg *orchconfig.Config, c Claim) (*orchconfig.Provisioner, Result) {
	res, _, ok := Resolve(Input{Classes: cfg.Classes, Provisioners: cfg.Provisioners, Claim: c})
	if !ok {
		return nil, res
	}
	return &cfg.Provisioners[res.Index], res
}

// Same reports whether c is provisioned the same under two configs: by an equal definition
// (its rollout timing aside) with the same class, params and deprovision policy, or by none
// under either.
func Same(a, b *orchconfig.Config, c Claim) bool {
	da, ra := Serving(a, c)
	db, rb := Serving(b, c)
	if da == nil || db == nil {
		return da == nil && db == nil
	}
	x, y := *da, *db
	x.Rollout, y.Rollout = nil, nil
	ra.Index, rb.Index = 0, 0
	return reflect.DeepEqual(x, y) && reflect.DeepEqual(ra, rb)
}
