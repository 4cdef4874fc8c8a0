package devenv

// Member clusters for the local environment: two more simulated clusters on this machine, each
// with its own API server and etcd, registered on the dev cluster (the hub) with labels, a
// backend that places Workloads on them, and an example taken onto one by selector.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/registration"
)

// members are the member clusters of the local environment, by name, with their labels.
var members = []struct {
	Name   string
	Labels map[string]string
}{
	{"eu", map[string]string{"env": "dev", "region": "eu"}},
	{"us", map[string]string{"env": "dev", "region": "us"}},
}

// The backend the members add to the web-service profile, the Workload label that selects it,
// and the namespace of the example placed on a member.
const (
	MembersBackend   = "k8s-web-members"
	MembersLabel     = "score.dev/placement"
	MembersNamespace = "score-members"
)

// member is the environment of one member cluster: its state under Dir/members/NAME.
func (e *Env) member(name string) *Env {
	return &Env{Bundle: e.Bundle, Dir: filepath.Join(e.Dir, "members", name), Cluster: e.Cluster + "-" + name, Progress: e.Progress}
}

// UpMembers starts the member clusters, registers them on the hub (Up must have run), adds a
// web-service backend that places on env=dev clusters for Workloads labelled
// score.dev/placement=members, applies the hello example so labelled, and waits until it is
// Ready. It is safe to run again.
func (e *Env) UpMembers(ctx context.Context, timeout time.Duration) error {
	hub, err := Connect(e.Kubeconfig())
	if err != nil {
		return fmt.Errorf("the hub (run dev up first): %w", err)
	}
	roles, err := registration.HubRoles(e.Bundle)
	if err != nil {
		return err
	}
	for _, m := range members {
		env := e.member(m.Name)
		if err := os.MkdirAll(env.Dir, 0o755); err != nil {
			return err
		}
		e.logf("starting member cluster %s", m.Name)
		if err := env.cluster(ctx, "up"); err != nil {
			return fmt.Errorf("starting member %s: %w", m.Name, err)
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig())
		if err != nil {
			return err
		}
		op, err := registration.Register(ctx, cfg, hub, registration.Registration{Name: m.Name, Namespace: "score-system", Labels: m.Labels, Roles: roles})
		if err != nil {
			return fmt.Errorf("registering member %s: %w", m.Name, err)
		}
		e.logf("  %s %s (%s)", m.Name, op, cfg.Host)
	}
	if err := addMembersBackend(ctx, hub); err != nil {
		return err
	}
	e.logf("applying examples/hello to namespace %s, labelled %s=members", MembersNamespace, MembersLabel)
	workloads, err := Example(e.Bundle, "examples/hello/score.yaml", MembersNamespace)
	if err != nil {
		return err
	}
	ns, err := toUnstructured(hub, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: MembersNamespace}})
	if err != nil {
		return err
	}
	if err := apply(ctx, hub, ns); err != nil {
		return err
	}
	for _, w := range workloads {
		if w.Labels == nil {
			w.Labels = map[string]string{}
		}
		w.Labels[MembersLabel] = "members"
		u, err := toUnstructured(hub, w)
		if err != nil {
			return err
		}
		unstructured.RemoveNestedField(u.Object, "status")
		if err := apply(ctx, hub, u); err != nil {
			return err
		}
	}
	if err := WaitReady(ctx, hub, MembersNamespace, timeout, e.Progress); err != nil {
		return fmt.Errorf("%w (controller logs: %s)", err, e.ControllersLog())
	}
	for _, w := range workloads {
		p := &scorev1b1.WorkloadPlan{}
		if err := hub.Get(ctx, client.ObjectKeyFromObject(w), p); err != nil {
			return err
		}
		e.logf("%s/%s runs on member %s: kubectl --kubeconfig %s get deployments -n %s", w.Namespace, w.Name, p.Spec.Cluster,
			e.member(p.Spec.Cluster).Kubeconfig(), w.Namespace)
	}
	return nil
}

// DownMembers deletes the member clusters that exist.
func (e *Env) DownMembers(ctx context.Context) error {
	var errs error
	for _, m := range members {
		env := e.member(m.Name)
		if _, err := os.Stat(env.Dir); err != nil {
			continue
		}
		errs = errors.Join(errs, env.cluster(ctx, "down"))
	}
	return errs
}

// addMembersBackend adds, once, the backend that places web services on the members to the
// Orchestrator Config the hub runs with: the highest priority, for Workloads labelled
// score.dev/placement=members only, on clusters labelled env=dev.
func addMembersBackend(ctx context.Context, hub client.Client) error {
	return AddPlacedBackend(ctx, hub, MembersBackend, map[string]any{"env": "dev"})
}

// AddPlacedBackend adds, once, the web-service backend id to the Orchestrator Config the hub
// runs with: the first backend's template, the highest priority, for Workloads labelled
// score.dev/placement=members only, placed on the clusters whose labels match clusterLabels.
func AddPlacedBackend(ctx context.Context, hub client.Client, id string, clusterLabels map[string]any) error {
	return EditConfig(ctx, hub, func(doc map[string]any) error {
		profiles, _ := doc["profiles"].([]any)
		for _, p := range profiles {
			profile, _ := p.(map[string]any)
			if profile["name"] != "web-service" {
				continue
			}
			backends, _ := profile["backends"].([]any)
			if len(backends) == 0 {
				return errors.New("the web-service profile has no backend")
			}
			for _, b := range backends {
				if b.(map[string]any)["backendId"] == id {
					return nil
				}
			}
			first := backends[0].(map[string]any)
			profile["backends"] = append(backends, map[string]any{"backendId": id, "runtimeClass": first["runtimeClass"], "priority": 1000, "version": "1.0.0", "template": first["template"],
				"constraints": map[string]any{"selectors": []any{map[string]any{"matchLabels": map[string]any{MembersLabel: "members"}}}},
				"placement":   map[string]any{"clusterSelector": map[string]any{"matchLabels": clusterLabels}}})
			return nil
		}
		return errors.New("the Orchestrator Config has no web-service profile")
	})
}

// PlaceBackends gives every backend of profile ("" every profile) of the Orchestrator Config
// the hub runs with the placement (as the config writes it: clusterSelector, policy), and
// returns how many it placed.
func PlaceBackends(ctx context.Context, hub client.Client, profile string, placement map[string]any) (int, error) {
	placed := 0
	err := EditConfig(ctx, hub, func(doc map[string]any) error {
		profiles, _ := doc["profiles"].([]any)
		for _, p := range profiles {
			pr, _ := p.(map[string]any)
			if profile != "" && pr["name"] != profile {
				continue
			}
			backends, _ := pr["backends"].([]any)
			for _, b := range backends {
				b.(map[string]any)["placement"] = placement
				placed++
			}
		}
		if placed == 0 {
			return fmt.Errorf("no backend of profile %q in the config", profile)
		}
		return nil
	})
	return placed, err
}

// EditConfig rewrites the Orchestrator Config the hub runs with through edit, refusing a result
// that does not validate.
func EditConfig(ctx context.Context, hub client.Client, edit func(doc map[string]any) error) error {
	cm := &corev1.ConfigMap{}
	if err := hub.Get(ctx, client.ObjectKey{Namespace: "score-system", Name: "orchestrator-config"}, cm); err != nil {
		return err
	}
	var doc map[string]any
	if err := yaml.Unmarshal([]byte(cm.Data["config.yaml"]), &doc); err != nil {
		return err
	}
	if err := edit(doc); err != nil {
		return err
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		return err
	}
	if _, err := orchconfig.Parse(out); err != nil {
		return fmt.Errorf("the edited config: %w", err)
	}
	cm.Data["config.yaml"] = string(out)
	return hub.Update(ctx, cm)
}
