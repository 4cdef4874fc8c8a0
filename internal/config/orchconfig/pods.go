package orchconfig

import (
	"fmt"
	"slices"
	"strings"

	"github.com/score-orchestrator/score-orchestrator/internal/config/podrules"
)

// pods checks what the config says pods may do: the namespaces whose probes may name a host,
// and each backend's and definition's kinds and pods.
func (v *validator) pods(cfg *Config) {
	if cfg.ProbeHosts != nil {
		v.selector("probeHosts", *cfg.ProbeHosts)
	}
	for i, p := range cfg.Profiles {
		for j, b := range p.Backends {
			path := fmt.Sprintf("profiles[%d].backends[%d]", i, j)
			v.kinds(path+".kinds", cfg, b.Kinds)
			v.podAllowances(path+".pods", b.Pods, true)
		}
	}
	for i, p := range cfg.Provisioners {
		path := fmt.Sprintf("provisioners[%d]", i)
		v.kinds(path+".kinds", cfg, p.Kinds)
		v.podAllowances(path+".pods", p.Pods, false)
	}
}

// kinds checks a backend's or a definition's kinds: each as allowedKinds lists kinds, once,
// and allowed by it (a kind it does not allow could never be created).
func (v *validator) kinds(path string, cfg *Config, kinds []string) {
	for i, k := range kinds {
		kpath := fmt.Sprintf("%s[%d]", path, i)
		kind, group, _ := strings.Cut(k, ".")
		switch {
		case !allowedKindPattern.MatchString(k):
			v.fail(kpath, "%q must be Kind or Kind.group, e.g. Deployment.apps", k)
		case slices.Index(kinds, k) < i:
			v.fail(kpath, "kind %q is listed twice", k)
		case !cfg.KindAllowed(group, kind):
			v.fail(kpath, "%q is not in allowedKinds, so nothing may create it", k)
		}
	}
}

// podAllowances checks a backend's (backend) or a definition's pods: a ServiceAccount name,
// rules the pod rules know, each once, and a token for backends only.
func (v *validator) podAllowances(path string, p *Pods, backend bool) {
	if p == nil {
		return
	}
	if p.ServiceAccountName != "" && !isDNSSubdomain(p.ServiceAccountName) {
		v.fail(path+".serviceAccountName", "%q is not a ServiceAccount name (a DNS subdomain)", p.ServiceAccountName)
	}
	if p.ServiceAccountToken && !backend {
		v.fail(path+".serviceAccountToken", "only a backend's pods get a token this way: a definition's manifests set automountServiceAccountToken themselves")
	}
	known := podrules.Names()
	for i, a := range p.Allow {
		apath := fmt.Sprintf("%s.allow[%d]", path, i)
		switch {
		case !slices.Contains(known, a):
			v.fail(apath, "%q is not a pod rule: use %s", a, strings.Join(known, ", "))
		case slices.Index(p.Allow, a) < i:
			v.fail(apath, "rule %q is listed twice", a)
		}
	}
}
