package provisionercmd

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/score-orchestrator/score-orchestrator/internal/provisioners/provisioning"
)

func TestResolve(t *testing.T) {
	onPath := func(name string) (string, error) {
		if name == "bash" {
			return "/usr/bin/bash", nil
		}
		return "", errors.New("not found")
	}
	cases := []struct {
		name, uri, want, err string
	}{
		{"name on PATH", "cmd://bash", "/usr/bin/bash", ""},
		{"a fragment only names the definition", "cmd://bash#dotenv", "/usr/bin/bash", ""},
		{"absolute path", "cmd:///opt/provisioners/dns", "/opt/provisioners/dns", ""},
		{"absolute path is cleaned", "cmd:///opt/x/../provisioners/dns#a", "/opt/provisioners/dns", ""},
		{"not on PATH", "cmd://python3#dotenv", "", "python3 is not on the controller's PATH"},
		{"relative to the working directory", "cmd://./bin/prov", "", "working directory or home"},
		{"relative to the parent", "cmd://../prov", "", "working directory or home"},
		{"home", "cmd://~/prov", "", "working directory or home"},
		{"a name with a path", "cmd://test-provisioners/without-class", "", "takes no path"},
		{"no path at all", "cmd:///", "", "needs an absolute path"},
		{"query", "cmd://bash?x=1", "", "no user, port or query"},
		{"user", "cmd://me@bash", "", "no user, port or query"},
		{"another scheme", "template://bash", "", "not a cmd:// uri"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Resolve(tc.uri, onPath)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrNotRunnable) {
					t.Fatalf("want error %q, got %q, %v", tc.err, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("want %q, got %q, %v", tc.want, got, err)
			}
		})
	}
}

func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "prov.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

var limits = Limits{Timeout: 5 * time.Second, MaxOutput: 1 << 16}

func TestRunPassesScoreK8sInputAndDecodesOutput(t *testing.T) {
	// The script answers with what it was given: its stdin as an output, its args, and its
	// environment, so the test sees the contract from the command's side.
	bin := script(t, `in=$(cat)
printf '{"resource_outputs":{"stdin":%s,"args":"%s","env":"%s","cwd":"%s"},"resource_state":{"n":1},"shared_state":{"k":"v"},"manifests":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}]}' "$in" "$*" "$(env | sort | tr '\n' ' ')" "$(pwd)"
`)
	t.Setenv("CONTROLLER_TOKEN", "must-not-leak")
	d := provisioning.Data{
		Guid: "g", Uid: "kv.default#web.db", Type: "kv", Class: "default", Id: "web.db",
		State: map[string]any{"prev": true}, Namespace: "ns", SourceWorkload: "web",
		WorkloadServices: map[string]provisioning.NetworkService{"api": {ServiceName: "api", Ports: map[string]provisioning.ServicePort{"http": {Name: "http", Port: 80, TargetPort: 8080, Protocol: "TCP"}}}},
	}
	res, err := Run(context.Background(), bin, []string{"<mode>", "x"}, NewInput(d), limits)
	if err != nil {
		t.Fatal(err)
	}
	stdin, _ := json.Marshal(res.Outputs["stdin"]) // re-encoded: keys sorted
	for _, want := range []string{`"resource_uid":"kv.default#web.db"`, `"resource_class":"default"`, `"resource_params":null`, `"resource_state":{"prev":true}`, `"shared_state":{}`, `"namespace":"ns"`, `"source_workload":"web"`, `"workload_services":{"api":{"ServiceName":"api","ports":{"http":{"name":"http","port":80,"protocol":"TCP","target_port":8080}}}}`} {
		if !strings.Contains(string(stdin), want) {
			t.Errorf("stdin %s lacks %s", stdin, want)
		}
	}
	if res.Outputs["args"] != "provision x" {
		t.Errorf("args %v", res.Outputs["args"])
	}
	env := res.Outputs["env"].(string)
	if strings.Contains(env, "CONTROLLER_TOKEN") || !strings.Contains(env, "HOME=") {
		t.Errorf("the command must get a minimal environment, got %s", env)
	}
	if cwd := res.Outputs["cwd"].(string); !strings.HasPrefix(filepath.Base(cwd), "score-cmd-") {
		t.Errorf("cwd %s", cwd)
	} else if _, err := os.Stat(cwd); !os.IsNotExist(err) {
		t.Errorf("the scratch directory %s must be removed after the run", cwd)
	}
	if res.State["n"] != float64(1) || res.Shared["k"] != "v" || len(res.Manifests) != 1 {
		t.Fatalf("result %+v", res)
	}
}

func TestRunFailures(t *testing.T) {
	cases := []struct {
		name, body string
		lim        Limits
		want       string
	}{
		{"exit status with the last stderr line", "echo starting >&2; echo 'quota exhausted' >&2; exit 3", limits, "exited with status 3: quota exhausted"},
		{"timeout kills the process group", "sleep 30 & sleep 30; echo '{}'", Limits{Timeout: 300 * time.Millisecond, MaxOutput: 1024}, "did not finish within 300ms"},
		{"output bound", "head -c 100000 /dev/zero | tr '\\0' a", Limits{Timeout: 5 * time.Second, MaxOutput: 1024}, "printed more than 1024 bytes"},
		{"unknown output field", `echo '{"resource_outputs":{},"extra":1}'`, limits, `unknown field "extra"`},
		{"no output", "true", limits, "not a provisioner result"},
		{"manifest without kind", `echo '{"manifests":[{"metadata":{}}]}'`, limits, "no apiVersion or kind"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, err := Run(context.Background(), script(t, tc.body), nil, NewInput(provisioning.Data{}), tc.lim)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want %q, got %v", tc.want, err)
			}
			if time.Since(start) > 4*time.Second {
				t.Fatalf("took %s: the run was not bounded", time.Since(start))
			}
		})
	}
}

// A timed-out shell's background children die with it, and the run ends at the timeout, not
// when the children would have finished.
func TestTimeoutKillsChildren(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	bin := script(t, "sleep 30 & echo $! > "+pidFile+"; wait")
	start := time.Now()
	_, err := Run(context.Background(), bin, nil, NewInput(provisioning.Data{}), Limits{Timeout: 300 * time.Millisecond, MaxOutput: 1024})
	if err == nil || !strings.Contains(err.Error(), "did not finish") {
		t.Fatalf("want a timeout, got %v", err)
	}
	if took := time.Since(start); took > 1500*time.Millisecond {
		t.Fatalf("took %s", took)
	}
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		stat, err := os.ReadFile("/proc/" + strings.TrimSpace(string(raw)) + "/stat")
		// Gone, or a zombie waiting for init to reap it.
		if err != nil || strings.Contains(string(stat), ") Z ") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the child %s outlived the run", strings.TrimSpace(string(raw)))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
