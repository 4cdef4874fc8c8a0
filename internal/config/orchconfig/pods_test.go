package orchconfig

import (
	"testing"
)

func TestValidatePods(t *testing.T) {
	cases := []validationCase{
		{"a backend's and a definition's kinds and pods", func(c *Config) {
			c.Profiles[0].Backends[0].Kinds = []string{"Deployment.apps", "Service"}
			c.Profiles[0].Backends[0].Pods = &Pods{ServiceAccountName: "web", ServiceAccountToken: true, Allow: []string{"probeHosts"}}
			c.Provisioners[0].Kinds = []string{"Job.batch"}
			c.Provisioners[0].Pods = &Pods{Allow: []string{"seccomp", "appArmor"}}
			c.ProbeHosts = &Selector{MatchLabels: map[string]string{"probes": "any-host"}}
		}, "", ""},
		{"a kind that is not Kind.group", func(c *Config) { c.Provisioners[0].Kinds = []string{"apps/v1/Deployment"} },
			"provisioners[0].kinds[0]", `"apps/v1/Deployment" must be Kind or Kind.group`},
		{"a kind listed twice", func(c *Config) { c.Profiles[0].Backends[0].Kinds = []string{"Service", "Service"} },
			"profiles[0].backends[0].kinds[1]", `kind "Service" is listed twice`},
		{"a kind allowedKinds does not allow", func(c *Config) { c.Provisioners[0].Kinds = []string{"ClusterRoleBinding.rbac.authorization.k8s.io"} },
			"provisioners[0].kinds[0]", `"ClusterRoleBinding.rbac.authorization.k8s.io" is not in allowedKinds, so nothing may create it`},
		{"a kind allowedKinds lists", func(c *Config) {
			c.AllowedKinds = []string{"CronJob.batch"}
			c.Provisioners[0].Kinds = []string{"CronJob.batch"}
		}, "", ""},
		{"an unknown pod rule", func(c *Config) { c.Provisioners[0].Pods = &Pods{Allow: []string{"hostNetwork"}} },
			"provisioners[0].pods.allow[0]", `"hostNetwork" is not a pod rule: use appArmor, capabilities, hostNamespaces, hostPath, hostPorts, privileged, probeHosts, procMount, seLinux, seccomp, sysctls, windowsHostProcess`},
		{"a pod rule listed twice", func(c *Config) { c.Profiles[0].Backends[0].Pods = &Pods{Allow: []string{"seccomp", "seccomp"}} },
			"profiles[0].backends[0].pods.allow[1]", `rule "seccomp" is listed twice`},
		{"a ServiceAccount name that is not one", func(c *Config) { c.Provisioners[0].Pods = &Pods{ServiceAccountName: "Build Bot"} },
			"provisioners[0].pods.serviceAccountName", `"Build Bot" is not a ServiceAccount name (a DNS subdomain)`},
		{"a token for a definition's pods", func(c *Config) { c.Provisioners[0].Pods = &Pods{ServiceAccountToken: true} },
			"provisioners[0].pods.serviceAccountToken", "only a backend's pods get a token this way"},
		{"probe hosts for every namespace by an empty selector", func(c *Config) { c.ProbeHosts = &Selector{} },
			"probeHosts", "a selector needs matchLabels, matchExpressions or namespaces"},
	}
	checkValidation(t, cases)
}

func TestProbeHostsAllowed(t *testing.T) {
	for _, tc := range []struct {
		name      string
		sel       *Selector
		namespace string
		labels    map[string]string
		want      bool
	}{
		{"no selector: no namespace", nil, "team-a", map[string]string{"probes": "any-host"}, false},
		{"by label", &Selector{MatchLabels: map[string]string{"probes": "any-host"}}, "team-a", map[string]string{"probes": "any-host"}, true},
		{"another label", &Selector{MatchLabels: map[string]string{"probes": "any-host"}}, "team-a", map[string]string{"probes": "pod"}, false},
		{"by name", &Selector{Namespaces: []string{"monitoring"}}, "monitoring", nil, true},
		{"another name", &Selector{Namespaces: []string{"monitoring"}}, "team-a", nil, false},
		{"by name and label, the label missing", &Selector{Namespaces: []string{"monitoring"}, MatchLabels: map[string]string{"probes": "any-host"}}, "monitoring", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Config{ProbeHosts: tc.sel}
			if got := c.ProbeHostsAllowed(tc.namespace, tc.labels); got != tc.want {
				t.Fatalf("got %v", got)
			}
		})
	}
}
