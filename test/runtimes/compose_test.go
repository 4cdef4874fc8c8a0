package runtimes

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/pkg/stdcopy"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/dockerruntime"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/planner"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// score-compose's default provisioner file, loaded unchanged, runs a Docker Workload's
// postgres, redis and volume as containers on its host, next to it on its namespace's network:
// the Workload is Ready once its postgres is healthy and its database made, the outputs reach
// its container (the passwords through the claims' outputs Secrets, never their status), the
// database answers to the claim's user and password, redis to its password, the volume is the
// namespace's; deleting the Workload (policy Delete) removes them all.
func TestComposeProvisioners(t *testing.T) {
	needDocker(t)
	if composeSkipped != "" {
		t.Skip(composeSkipped)
	}
	w := workload(shop, "orders", map[string]string{
		"DB_HOST": "${resources.db.host}", "DB_PASSWORD": "${resources.db.password}",
		"REDIS_HOST": "${resources.cache.host}", "VOLUME": "${resources.data.source}",
	}, func(s *scorev1b1.WorkloadSpec) {
		s.Resources = map[string]scorev1b1.Resource{"db": {Type: "postgres"}, "cache": {Type: "redis"}, "data": {Type: "volume"}}
	})
	// A volume claim would make it a stateful-service (the development config's rule), which
	// only Kubernetes backends offer: the Workload asks for web-service.
	w.Annotations = map[string]string{scorev1b1.AnnotationProfile: "web-service"}
	if err := hub.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			var claims scorev1b1.ResourceClaimList
			_ = hub.List(ctx, &claims, client.InNamespace(shop))
			for _, c := range claims.Items {
				t.Logf("claim %s (runtime %q): %s %s: %s (provisioner %s)", c.Name, c.Spec.RuntimeClass, c.Status.Phase, c.Status.Reason, c.Status.Message, c.Status.Provisioner)
			}
		}
	})
	ready(t, w)

	db := claimOutputs(t, w, "db", "postgres")
	cache := claimOutputs(t, w, "cache", "redis")
	data := claimOutputs(t, w, "data", "volume")
	if got := served(t, w, "/env/DB_HOST"); got != db["host"] {
		t.Errorf("DB_HOST %q, want the postgres claim's host %q", got, db["host"])
	}
	if got := served(t, w, "/env/DB_PASSWORD"); got != db["password"] || got == "" {
		t.Errorf("DB_PASSWORD %q, want the claim's password", got)
	}

	// The database answers, by its service name on the namespace's network, to the claim's
	// user with its password; redis to its password.
	query := fmt.Sprintf("PGPASSWORD=%s psql -h %s -U %s -d %s -tAc 'select current_user'", db["password"], db["host"], db["username"], db["database"])
	if out := execIn(t, db["host"], "sh", "-c", query); strings.TrimSpace(out) != db["username"] {
		t.Errorf("psql as the claim's user answered %q", out)
	}
	if out := execIn(t, cache["host"], "redis-cli", "-h", cache["host"], "-a", cache["password"], "--no-auth-warning", "ping"); strings.TrimSpace(out) != "PONG" {
		t.Errorf("redis-cli with the claim's password answered %q", out)
	}
	if _, err := engine.Client.VolumeInspect(ctx, "score_"+shop+"_"+data["source"]); err != nil {
		t.Errorf("the volume resource's volume: %v", err)
	}
	// An agent that restarts finds its services and recreates none of them.
	before := serviceContainerIDs(t)
	since, _ := passes(t, "docker-services")
	restart(t, &stopAgent, startAgent)
	settled(t, "docker-services", since, 1)
	if after := serviceContainerIDs(t); strings.Join(after, ",") != strings.Join(before, ",") {
		t.Errorf("the agent's restart changed the service containers: %v, then %v", before, after)
	}

	// Another namespace's containers do not reach these by name: its network is another.
	if !t.Failed() {
		probe := workload(other, "prober", nil, func(s *scorev1b1.WorkloadSpec) {
			s.Resources = map[string]scorev1b1.Resource{"cache": {Type: "redis"}}
		})
		if err := hub.Create(ctx, probe); err != nil {
			t.Fatal(err)
		}
		ready(t, probe)
		theirs := claimOutputs(t, probe, "cache", "redis")
		if out, code := execCode(t, containerOf(t, other, theirs["host"]), "getent", "hosts", db["host"]); code == 0 {
			t.Errorf("a container of namespace %s resolves %s's %s: %s", other, shop, db["host"], out)
		}
		if err := hub.Delete(ctx, probe); err != nil {
			t.Fatal(err)
		}
	}

	if err := hub.Delete(ctx, w); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 2*time.Minute, "the services and volumes go with their claims", func() error {
		cs, err := engine.Client.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", dockerruntime.LabelNamespace+"="+shop), filters.Arg("label", dockerruntime.LabelService))})
		if err != nil {
			return err
		}
		vs, err := engine.Client.VolumeList(ctx, volume.ListOptions{Filters: filters.NewArgs(filters.Arg("label", dockerruntime.LabelNamespace+"="+shop))})
		if err != nil {
			return err
		}
		if len(cs)+len(vs.Volumes) > 0 {
			return fmt.Errorf("%d service containers and %d volumes left", len(cs), len(vs.Volumes))
		}
		return nil
	})
}

// serviceContainerIDs are the IDs of shop's service containers, sorted.
func serviceContainerIDs(t *testing.T) []string {
	t.Helper()
	return containersLabelled(t, shop, dockerruntime.LabelService)
}

// claimOutputs are a claim's outputs, its status's and its outputs Secret's; a password is in
// the Secret only.
func claimOutputs(t *testing.T, w *scorev1b1.Workload, key, typ string) map[string]string {
	t.Helper()
	c := &scorev1b1.ResourceClaim{}
	if err := hub.Get(ctx, client.ObjectKey{Namespace: w.Namespace, Name: planner.ClaimName(w.Name, key, typ)}, c); err != nil {
		t.Fatal(err)
	}
	if c.Spec.RuntimeClass != scorev1b1.RuntimeClassDocker {
		t.Errorf("claim %s: runtimeClass %q", key, c.Spec.RuntimeClass)
	}
	out := map[string]string{}
	if c.Status.Outputs != nil {
		var plain map[string]any
		if err := json.Unmarshal(c.Status.Outputs.Raw, &plain); err != nil {
			t.Fatal(err)
		}
		for k, v := range plain {
			out[k] = fmt.Sprint(v)
		}
	}
	if _, ok := out["password"]; ok {
		t.Errorf("claim %s publishes its password in its status", key)
	}
	if c.Status.SecretRef != nil {
		s := &corev1.Secret{}
		if err := hub.Get(ctx, client.ObjectKey{Namespace: w.Namespace, Name: c.Status.SecretRef.Name}, s); err != nil {
			t.Fatal(err)
		}
		for k, v := range s.Data {
			out[k] = string(v)
		}
	}
	return out
}

// containerOf is the running container of a service, or of a Workload's (its first), by
// name.
func containerOf(t *testing.T, ns, name string) string {
	t.Helper()
	for _, label := range []string{dockerruntime.LabelService, scorev1b1.LabelWorkload} {
		cs, err := engine.Client.ContainerList(ctx, container.ListOptions{Filters: filters.NewArgs(filters.Arg("label", dockerruntime.LabelNamespace+"="+ns), filters.Arg("label", label+"="+name))})
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) > 0 {
			return cs[0].ID
		}
	}
	t.Fatalf("no running container of %s/%s", ns, name)
	return ""
}

// execIn runs a command in the service's container and returns its output; it must succeed.
func execIn(t *testing.T, service string, cmd ...string) string {
	t.Helper()
	out, code := execCode(t, containerOf(t, shop, service), cmd...)
	if code != 0 {
		t.Fatalf("%v in %s exited %d: %s", cmd, service, code, out)
	}
	return out
}

func execCode(t *testing.T, id string, cmd ...string) (string, int) {
	t.Helper()
	e, err := engine.Client.ContainerExecCreate(ctx, id, container.ExecOptions{Cmd: cmd, AttachStdout: true, AttachStderr: true})
	if err != nil {
		t.Fatal(err)
	}
	attached, err := engine.Client.ContainerExecAttach(ctx, e.ID, container.ExecAttachOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer attached.Close()
	var stdout, stderr bytes.Buffer
	if _, err := stdcopy.StdCopy(&stdout, &stderr, attached.Reader); err != nil {
		t.Fatal(err)
	}
	inspect, err := engine.Client.ContainerExecInspect(ctx, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	return stdout.String() + stderr.String(), inspect.ExitCode
}
