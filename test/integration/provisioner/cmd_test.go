package provisioner

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/provisioners/provisioning"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// cmdProvisionerSource is a command provisioner written as score-k8s's contract asks: it
// reads the document on stdin and prints the result on stdout. It keeps a generated password
// and a run counter in its state, counts its instances in the shared state, and publishes the
// password as a secret output through a Secret it creates.
const cmdProvisionerSource = `package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
)

func main() {
	var in struct {
		Guid   string         ` + "`json:\"resource_guid\"`" + `
		Uid    string         ` + "`json:\"resource_uid\"`" + `
		Params map[string]any ` + "`json:\"resource_params\"`" + `
		State  map[string]any ` + "`json:\"resource_state\"`" + `
		Shared map[string]any ` + "`json:\"shared_state\"`" + `
		NS     string         ` + "`json:\"namespace\"`" + `
	}
	if err := json.NewDecoder(os.Stdin).Decode(&in); err != nil {
		os.Stderr.WriteString("bad input: " + err.Error() + "\n")
		os.Exit(2)
	}
	password, _ := in.State["password"].(string)
	if password == "" {
		b := make([]byte, 16)
		rand.Read(b)
		password = hex.EncodeToString(b)
	}
	runs, _ := in.State["runs"].(float64)
	instances, _ := in.Shared["cmd_instances"].(float64)
	name := "cmd-" + in.Guid[:8]
	size, _ := in.Params["size"].(string)
	if size == "" {
		size = "small"
	}
	json.NewEncoder(os.Stdout).Encode(map[string]any{
		"resource_state":   map[string]any{"password": password, "runs": runs + 1},
		"shared_state":     map[string]any{"cmd_instances": instances + 1},
		"resource_outputs": map[string]any{"host": name + "." + in.NS, "uid": in.Uid, "size": size, "password": "🔐💬" + name + "_password💬🔐"},
		"manifests": []any{
			map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": name}, "stringData": map[string]any{"password": password}},
			map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name}, "data": map[string]any{"size": size}},
		},
	})
}
`

// cmdScript echoes its params as outputs, or fails as asked.
const cmdScript = `#!/bin/sh
input=$(cat)
case "$1" in
  fail) echo "the quota for $2 is exhausted" >&2; exit 4 ;;
esac
printf '{"resource_outputs":{"mode":"%s","input":%s}}' "$1" "$input"
`

// buildCmdProvisioners builds the Go provisioner and writes the script into dir.
func buildCmdProvisioners(dir string) (goBin, script string, err error) {
	src := filepath.Join(dir, "prov.go")
	if err := os.WriteFile(src, []byte(cmdProvisionerSource), 0o644); err != nil {
		return "", "", err
	}
	goBin = filepath.Join(dir, "kvprov")
	build := exec.Command("go", "build", "-o", goBin, src)
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("building the command provisioner: %v: %s", err, out)
	}
	script = filepath.Join(dir, "echo.sh")
	return goBin, script, os.WriteFile(script, []byte(cmdScript), 0o755)
}

func TestCmdProvisionerBindsWithStableState(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	c := newClaim(ns, "web-cache", "web", "cache", "cmd-kv", "", scorev1b1.DeprovisionDelete)
	testenv.Create(t, env.Client, c)
	c = waitPhase(t, c, scorev1b1.ClaimPhaseBound)
	out := string(c.Status.Outputs.Raw)
	for _, want := range []string{`"uid":"cmd-kv.default#web.cache"`, `"size":"small"`, `"host":"cmd-`} {
		if !strings.Contains(out, want) {
			t.Errorf("outputs %s lack %s", out, want)
		}
	}
	if strings.Contains(out, "password") {
		t.Fatalf("a secret output reached the status: %s", out)
	}
	password := secretValue(t, ns, c.Status.SecretRef.Name, "password")
	if len(password) != 32 {
		t.Fatalf("password %q", password)
	}
	id := provisioning.NewIdentity(ns, "web", "cache", "cmd-kv", "", "")
	if state := secretValue(t, ns, id.StateSecretName(), "state.json"); !strings.Contains(state, password) {
		t.Fatalf("the command's state must be kept in the state Secret, found %s", state)
	}
	if shared := secretValue(t, ns, "score-provisioner-shared-state", "state.json"); !strings.Contains(shared, `"cmd_instances"`) {
		t.Fatalf("shared state %s", shared)
	}

	t.Run("a spec change re-runs the command with its state", func(t *testing.T) {
		c.Spec.Params = jsonRaw(`{"size":"large"}`)
		if err := env.Client.Update(ctx, c); err != nil {
			t.Fatal(err)
		}
		waitOutputs(t, c, `"size":"large"`)
		if got := secretValue(t, ns, c.Status.SecretRef.Name, "password"); got != password {
			t.Fatal("the password was regenerated")
		}
	})

	t.Run("Delete removes the objects and the state", func(t *testing.T) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: c.Status.Resources[1].Name}}
		if err := env.Client.Delete(ctx, c); err != nil {
			t.Fatal(err)
		}
		gone(t, c)
		gone(t, cm)
		gone(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: id.StateSecretName()}})
	})
}

func waitOutputs(t *testing.T, c *scorev1b1.ResourceClaim, want string) {
	t.Helper()
	got := waitPhase(t, c, scorev1b1.ClaimPhaseBound)
	if !strings.Contains(string(got.Status.Outputs.Raw), want) {
		t.Fatalf("outputs %s lack %s", got.Status.Outputs.Raw, want)
	}
	*c = *got
}

func TestCmdScript(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	c := newClaim(ns, "web-echo", "web", "echo", "cmd-echo", "", scorev1b1.DeprovisionDelete)
	c.Spec.Params = jsonRaw(`{"greeting":"hi"}`)
	testenv.Create(t, env.Client, c)
	c = waitPhase(t, c, scorev1b1.ClaimPhaseBound)
	out := string(c.Status.Outputs.Raw)
	for _, want := range []string{`"mode":"provision"`, `"resource_params":{"greeting":"hi"}`, `"namespace":"` + ns + `"`, `"source_workload":"web"`} {
		if !strings.Contains(out, want) {
			t.Errorf("outputs %s lack %s", out, want)
		}
	}
}

func TestCmdFailures(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	cases := []struct {
		typ, reason, message string
	}{
		{"cmd-fails", "ClaimFailed", "exited with status 4: the quota for storage is exhausted"},
		{"cmd-relative", "ClaimFailed", "resolves against the controller's working directory or home"},
		{"cmd-missing", "ClaimFailed", "no-such-provisioner-binary is not on the controller's PATH"},
	}
	for _, tc := range cases {
		t.Run(tc.typ, func(t *testing.T) {
			c := newClaim(ns, "w-"+tc.typ, "w", tc.typ, tc.typ, "", scorev1b1.DeprovisionDelete)
			testenv.Create(t, env.Client, c)
			c = waitPhase(t, c, scorev1b1.ClaimPhaseFailed)
			if string(c.Status.Reason) != tc.reason || !strings.Contains(c.Status.Message, tc.message) {
				t.Fatalf("status %s: %s", c.Status.Reason, c.Status.Message)
			}
		})
	}
}

// With --enable-cmd-provisioners off (the second controller, serving namespace cmd-off), a
// command provisioner's claim fails and says why and how to allow it; nothing runs.
func TestCmdDisabledByDefault(t *testing.T) {
	c := newClaim(cmdOffNamespace, "w-cache", "w", "cache", "cmd-kv", "", scorev1b1.DeprovisionDelete)
	testenv.Create(t, env.Client, c)
	c = waitPhase(t, c, scorev1b1.ClaimPhaseFailed)
	if c.Status.Reason != scorev1b1.ReasonPermissionDenied || !strings.Contains(c.Status.Message, "command provisioners are disabled") || !strings.Contains(c.Status.Message, "--enable-cmd-provisioners") {
		t.Fatalf("status %s: %s", c.Status.Reason, c.Status.Message)
	}
	var objs corev1.SecretList
	if err := env.Client.List(context.Background(), &objs, client.InNamespace(cmdOffNamespace)); err != nil {
		t.Fatal(err)
	}
	if len(objs.Items) > 0 {
		t.Fatalf("a disabled command must not run, yet %s exists", objs.Items[0].Name)
	}
}
