package main

import (
	"strings"
	"testing"
)

// overriding places the default web-service backend on env=prod clusters, with three replicas
// on region=eu, or eu replicas given.
func overriding(euReplicas string) func(string) string {
	return func(s string) string {
		const at = "  - backendId: k8s-web-v2\n"
		if strings.Count(s, at) != 1 {
			panic("the default web backend moved")
		}
		return strings.Replace(s, at, at+"    placement: {clusterSelector: {matchLabels: {env: prod}}, overrides: [{clusterSelector: {matchLabels: {region: eu}}, values: {replicas: "+euReplicas+"}}]}\n", 1)
	}
}

// render --cluster renders what a cluster gets: placed there with the overrides that match
// its --cluster-labels; a Workload that would not run there fails, saying why.
func TestClusterOverridesRender(t *testing.T) {
	cfg := devConfig(t, overriding("3"))
	hello := "../../examples/hello/score.yaml"
	render := func(extra ...string) (string, error) {
		out, _, err := execute(t, append([]string{"render", "-f", hello, "--config", cfg, "--templates", "../../config/templates", "-n", "score-demo"}, extra...)...)
		return out, err
	}
	cases := []struct {
		name     string
		args     []string
		want     []string
		wantErr  string
		notWants []string
	}{
		{name: "on an eu cluster: the override", args: []string{"--cluster", "eu-1", "--cluster-labels", "env=prod,region=eu"},
			want: []string{"backend k8s-web-v2 (runtime kubernetes), cluster eu-1, overrides[0]\n", "cluster: eu-1\n", "replicas: 3\n"}},
		{name: "on a us cluster: none", args: []string{"--cluster", "us-1", "--cluster-labels", "env=prod", "--cluster-labels", "region=us"},
			want: []string{"cluster us-1, no override\n", "replicas: 1\n"}, notWants: []string{"replicas: 3"}},
		{name: "without --cluster: not decided", want: []string{"replicas: 1\n"}, notWants: []string{"cluster:", "overrides["}},
		{name: "a cluster the placement does not choose", args: []string{"--cluster", "dev-1"},
			wantErr: "placement: backend k8s-web-v2 places on clusters matching env=prod, and no cluster given does; dev-1: Its labels (none) do not match the selector."},
		{name: "labels without a name", args: []string{"--cluster-labels", "env=prod"}, wantErr: "give the name too"},
		{name: "a label that is not one", args: []string{"--cluster", "eu-1", "--cluster-labels", "env"}, wantErr: `label "env": use key=value`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := render(tc.args...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range tc.want {
				if !strings.Contains(out, want) {
					t.Errorf("want %q in:\n%s", want, out)
				}
			}
			for _, not := range tc.notWants {
				if strings.Contains(out, not) {
					t.Errorf("want no %q in:\n%s", not, out)
				}
			}
		})
	}

	t.Run("a Workload whose backend runs on the hub", func(t *testing.T) {
		_, err := render("--cluster", "eu-1", "--cluster-labels", "env=prod,region=eu", "-f", "../../examples/batch/score.yaml")
		if err == nil || !strings.Contains(err.Error(), "runs it on the hub (it has no placement), not on cluster eu-1") {
			t.Fatalf("error %v", err)
		}
	})
}

// config diff names, per Workload, the cluster it runs on and the values an override change
// changes there; the Workloads on other clusters, and on the hub, do not change.
func TestClusterOverridesConfigDiff(t *testing.T) {
	old, changed := devConfig(t, overriding("3")), devConfig(t, overriding("4"))
	args := []string{"config", "diff", old, changed, "--workloads", "../../examples", "--templates", "../../config/templates"}

	out, _, err := execute(t, append(args, "--member", "eu-1:env=prod,region=eu")...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"default/hello on cluster eu-1:\n    values: replicas: 3 → 4\n    changed  Deployment default/hello\n", "default/nightly-report: no change\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q in:\n%s", want, out)
		}
	}

	out, _, err = execute(t, append(args, "--member", "us-1:env=prod,region=us")...)
	if err != nil || !strings.Contains(out, "default/hello on cluster us-1: no change\n") || !strings.Contains(out, " 0 would change") {
		t.Fatalf("on us-1 nothing changes: %v\n%s", err, out)
	}

	out, _, err = execute(t, append(args, "-o", "json", "--member", "eu-1:env=prod,region=eu")...)
	if err != nil || !strings.Contains(out, `"cluster": "eu-1"`) {
		t.Fatalf("json names the cluster: %v\n%s", err, out)
	}

	if _, _, err := execute(t, append(args, "--member", "Not A Name:env=prod")...); err == nil {
		t.Fatal("a member name that is not a name is refused")
	}
}

// render shows every copy of a Workload whose backend runs it on several clusters, each with
// its plan, its cluster and that cluster's overrides; --cluster picks the copy one cluster
// gets. Before, render followed the orchestrator's single-cluster path and printed one copy.
func TestRenderShowsEveryCopy(t *testing.T) {
	copies := func(n string) func(string) string {
		return func(s string) string {
			s = overriding("3")(s)
			return strings.Replace(s, "placement: {clusterSelector: {matchLabels: {env: prod}}, ", "placement: {clusters: \""+n+"\", clusterSelector: {matchLabels: {env: prod}}, ", 1)
		}
	}
	hello := "../../examples/hello/score.yaml"
	members := []string{"--member", "eu-1:env=prod,region=eu", "--member", "us-1:env=prod,region=us", "--member", "dev-1:env=dev"}
	render := func(cfg string, extra ...string) (string, error) {
		out, _, err := execute(t, append([]string{"render", "-f", hello, "--config", cfg, "--templates", "../../config/templates", "-n", "score-demo"}, extra...)...)
		return out, err
	}
	two, all := devConfig(t, copies("2")), devConfig(t, copies("All"))
	cases := []struct {
		name     string
		cfg      string
		args     []string
		want     []string
		notWants []string
		wantErr  string
	}{
		{name: "clusters: 2 on two matching members: both copies", cfg: two, args: members,
			want:     []string{"(2 of 2), cluster ", "cluster eu-1, overrides[0]\n", "cluster us-1, no override\n", "name: hello\n", "name: hello.1\n", "cluster: eu-1\n", "cluster: us-1\n", "replicas: 3\n", "replicas: 1\n"},
			notWants: []string{"dev-1"}},
		{name: "All: one copy on each matching member", cfg: all, args: members,
			want: []string{"(2 of 2)", "cluster eu-1, overrides[0]\n", "cluster us-1, no override\n"}},
		{name: "--cluster picks the copy of one member", cfg: two, args: append([]string{"--cluster", "us-1"}, members...),
			want: []string{"cluster us-1, no override\n", "replicas: 1\n"}, notWants: []string{"eu-1", "replicas: 3", "(1 of"}},
		{name: "--cluster of a member no copy goes to", cfg: two, args: append([]string{"--cluster", "dev-1"}, members...),
			wantErr: "places its copies on "},
		{name: "--cluster that is no member", cfg: two, args: append([]string{"--cluster", "ap-1"}, members...),
			wantErr: "--cluster ap-1 is none of the --member clusters"},
		{name: "no members: as many copies as asked for, not placed", cfg: two,
			want: []string{"copy hello (1 of 2), cluster not decided, no override\n", "copy hello.1 (2 of 2), cluster not decided, no override\n"}, notWants: []string{"cluster: "}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := render(tc.cfg, tc.args...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range tc.want {
				if !strings.Contains(out, want) {
					t.Errorf("want %q in:\n%s", want, out)
				}
			}
			for _, not := range tc.notWants {
				if strings.Contains(out, not) {
					t.Errorf("want no %q in:\n%s", not, out)
				}
			}
		})
	}
}
