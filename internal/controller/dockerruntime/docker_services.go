package dockerruntime

// The namespaces' Compose services: what definitions in score-compose's format left for the
// host in their fragment Secrets (compose.Fragment), run as score-compose would run them in a
// project per namespace: every service on the namespace's network under its name, in
// depends_on order, its volumes the namespace's own, its files copied in. A claim released
// with Delete takes its Secret, and the services and volumes no other fragment declares go
// with it; Retain keeps the Secret, and them.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/errdefs"
	"github.com/docker/go-connections/nat"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/compose"
)

// Labels of the namespaces' Compose services and volumes (beside LabelHost, LabelNamespace
// and LabelHash).
const (
	LabelService = "score.dev/compose-service"
	LabelVolume  = "score.dev/compose-volume"
)

// networkName is the namespace's network: its Workloads' and services' containers, and no
// other namespace's.
func networkName(namespace string) string { return "score_" + namespace }

// volumeName is a named volume of the namespace.
func volumeName(namespace, name string) string { return "score_" + namespace + "_" + name }

func serviceContainerName(namespace, service, hash string) string {
	return strings.Join([]string{"scoresvc", namespace, service, hash[:8]}, "_")
}

// Services reconciles the Compose services of one namespace (the request's namespace; its
// name is empty).
type Services struct{ *Reconciler }

// Reconcile runs the namespace's services as its fragments say, and removes what none says.
func (s Services) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	r, ns := s.Reconciler, req.Namespace
	f, conflicts, err := r.fragments(ctx, ns)
	if err != nil {
		// Nothing is run or removed on a partial view: what a fragment not read declares
		// would go, volumes too.
		return ctrl.Result{}, err
	}
	if conflicts != nil {
		ctrl.LoggerFrom(ctx).Error(conflicts, "The namespace's Compose fragments disagree; the first of each is run", "namespace", ns)
	}
	order, err := f.Order()
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "The namespace's Compose services cannot be ordered", "namespace", ns)
		return ctrl.Result{}, nil // the Secrets' next change brings the namespace back
	}
	live, err := r.serviceContainers(ctx, ns)
	if err != nil {
		return ctrl.Result{}, err
	}
	volumes, err := r.volumes(ctx, ns)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(order) > 0 || len(f.Volumes) > 0 {
		if err := r.ensureNetwork(ctx, ns); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.ensureVolumes(ctx, ns, f, volumes); err != nil {
			return ctrl.Result{}, err
		}
	}
	var errs []error
	desired := map[string]string{}
	for _, name := range order {
		hash := r.serviceHash(f, name)
		desired[name] = hash
		var current *container.InspectResponse
		for i, c := range live[name] {
			if c.Config.Labels[LabelHash] == hash {
				current = &live[name][i]
				continue
			}
			// An older version goes before the new one starts: two of a database on one volume
			// would corrupt it.
			if err := r.removeContainer(ctx, c); err != nil {
				errs = append(errs, err)
			}
		}
		if current != nil && current.State != nil && current.State.Status != "created" {
			continue // started once: its restart policy restarts it
		}
		if !dependenciesMet(f.Services[name], live, desired) {
			continue // the dependency's event brings the namespace back
		}
		if current != nil {
			// Created and never started: a pass that stopped between its creation and its
			// files left it; it is made again rather than started without them.
			if err := r.removeContainer(ctx, *current); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		if err := r.startService(ctx, ns, f, name, hash); err != nil {
			errs = append(errs, fmt.Errorf("service %s: %w", name, err))
		}
	}
	for name, cs := range live {
		for _, c := range cs {
			if _, ok := desired[name]; !ok {
				errs = append(errs, r.removeContainer(ctx, c))
			}
		}
	}
	errs = append(errs, r.removeVolumes(ctx, ns, f, volumes))
	return ctrl.Result{}, errors.Join(errs...)
}

// fragments reads the namespace's fragment Secrets and merges them, in the order of their
// names. conflicts are names two of them define differently (the first is kept); err is a
// fragment not read, which leaves the view partial.
func (r *Reconciler) fragments(ctx context.Context, namespace string) (merged compose.Fragment, conflicts, err error) {
	merged = compose.Fragment{Services: map[string]compose.Service{}, Volumes: map[string]compose.Volume{}, Files: map[string]string{}}
	var list corev1.SecretList
	if err := r.Client.List(ctx, &list, client.InNamespace(namespace), client.MatchingLabels{scorev1b1.LabelComposeFragment: "true"}); err != nil {
		return merged, nil, err
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	var errs []error
	for _, s := range list.Items {
		f, err := fragmentOf(&s)
		if err != nil {
			return merged, nil, err
		}
		if err := merged.Merge(f); err != nil {
			errs = append(errs, fmt.Errorf("secret %s: %w", s.Name, err))
		}
	}
	return merged, errors.Join(errs...), nil
}

// fragmentOf decodes a fragment Secret and checks it again: the label is all that marks it,
// and whoever may write Secrets in the namespace may write one.
func fragmentOf(s *corev1.Secret) (compose.Fragment, error) {
	var f compose.Fragment
	if err := json.Unmarshal(s.Data[scorev1b1.ComposeFragmentKey], &f); err != nil {
		return f, fmt.Errorf("secret %s: the fragment does not decode: %w", s.Name, err)
	}
	if err := f.Check(); err != nil {
		return f, fmt.Errorf("secret %s: %w", s.Name, err)
	}
	return f, nil
}

// serviceHash identifies a version of a service: its definition, its image as the host runs
// it and the files it mounts.
func (r *Reconciler) serviceHash(f compose.Fragment, name string) string {
	s := f.Services[name]
	files := map[string]string{}
	for _, m := range s.Mounts {
		for target, content := range f.FilesOf(m) {
			files[target] = content
		}
	}
	doc, _ := json.Marshal(struct {
		Service compose.Service
		Image   string
		Files   map[string]string
	}{s, r.image(s.Image), files})
	sum := sha256.Sum256(doc)
	return hex.EncodeToString(sum[:])
}

func (r *Reconciler) image(name string) string {
	if to, ok := r.Images[name]; ok {
		return to
	}
	return name
}

// serviceContainers are the namespace's service containers, by service.
func (r *Reconciler) serviceContainers(ctx context.Context, namespace string) (map[string][]container.InspectResponse, error) {
	f := filters.NewArgs(filters.Arg("label", LabelHost+"="+r.Host), filters.Arg("label", LabelNamespace+"="+namespace), filters.Arg("label", LabelService))
	containers, err := r.inspectAll(ctx, f)
	if err != nil {
		return nil, err
	}
	out := map[string][]container.InspectResponse{}
	for _, c := range containers {
		name := c.Config.Labels[LabelService]
		out[name] = append(out[name], c)
	}
	return out, nil
}

// dependenciesMet reports whether what a service depends on is as its conditions ask, in the
// versions the pass runs.
func dependenciesMet(s compose.Service, live map[string][]container.InspectResponse, desired map[string]string) bool {
	for dep, condition := range s.DependsOn {
		c, ok := current(live[dep], desired[dep])
		if !ok || c.State == nil {
			return false
		}
		switch condition {
		case compose.ServiceHealthy:
			if c.State.Health == nil || c.State.Health.Status != container.Healthy {
				return false
			}
		case compose.ServiceCompletedSuccessfully:
			if c.State.Running || c.State.Status != "exited" || c.State.ExitCode != 0 {
				return false
			}
		default:
			if c.State.Status == "created" {
				return false
			}
		}
	}
	return true
}

func current(cs []container.InspectResponse, hash string) (container.InspectResponse, bool) {
	for _, c := range cs {
		if c.Config.Labels[LabelHash] == hash {
			return c, true
		}
	}
	return container.InspectResponse{}, false
}

// startService creates (unless created) and starts a service's container on the namespace's
// network, under the service's name, with its files copied in; hardened as a Workload's.
func (r *Reconciler) startService(ctx context.Context, ns string, f compose.Fragment, name, hash string) error {
	s := f.Services[name]
	labels := map[string]string{}
	for k, v := range s.Labels {
		if !strings.HasPrefix(k, "score.dev/") { // the agent's own, which find and judge containers
			labels[k] = v
		}
	}
	for k, v := range map[string]string{LabelHost: r.Host, LabelNamespace: ns, LabelService: name, LabelHash: hash} {
		labels[k] = v
	}
	env := make([]string, 0, len(s.Environment))
	for k, v := range s.Environment {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	config := &container.Config{Image: r.image(s.Image), Env: env, Entrypoint: s.Entrypoint, Cmd: s.Command, Labels: labels, User: s.User, WorkingDir: s.WorkingDir}
	if h := s.Healthcheck; h != nil {
		config.Healthcheck = &container.HealthConfig{Test: h.Test, Interval: h.Interval, Timeout: h.Timeout, StartPeriod: h.StartPeriod, Retries: h.Retries}
	}
	host := hardened(restartPolicy(s.Restart))
	host.NetworkMode = container.NetworkMode(networkName(ns))
	if len(s.Ports) > 0 {
		config.ExposedPorts, host.PortBindings = nat.PortSet{}, nat.PortMap{}
		for _, port := range s.Ports {
			key := nat.Port(fmt.Sprintf("%d/tcp", port))
			config.ExposedPorts[key] = struct{}{}
			host.PortBindings[key] = []nat.PortBinding{{HostIP: r.Address}}
		}
	}
	var files []compose.File
	for _, m := range s.Mounts {
		if m.Volume != "" {
			host.Mounts = append(host.Mounts, mount.Mount{Type: mount.TypeVolume, Source: volumeName(ns, m.Volume), Target: m.Target, ReadOnly: m.ReadOnly})
			continue
		}
		targets := f.FilesOf(m)
		for _, target := range sortedKeys(targets) {
			files = append(files, compose.File{Target: target, Mode: 0o644, Content: []byte(targets[target])})
		}
	}
	endpoints := &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{networkName(ns): {Aliases: []string{name}}}}
	c, err := r.Docker.ContainerCreate(ctx, config, host, endpoints, nil, serviceContainerName(ns, name, hash))
	if err != nil {
		return err
	}
	if err := r.copyFiles(ctx, c.ID, files); err != nil {
		return err
	}
	return r.Docker.ContainerStart(ctx, c.ID, container.StartOptions{})
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func restartPolicy(restart string) container.RestartPolicy {
	policy, _, _ := strings.Cut(restart, ":")
	switch policy {
	case "always":
		return container.RestartPolicy{Name: container.RestartPolicyAlways}
	case "unless-stopped":
		return container.RestartPolicy{Name: container.RestartPolicyUnlessStopped}
	case "on-failure":
		return container.RestartPolicy{Name: container.RestartPolicyOnFailure}
	}
	return container.RestartPolicy{Name: container.RestartPolicyDisabled}
}

// hardened is the host configuration of every container the agent runs: a process gains no
// privilege by exec (setuid binaries), cannot fill the host's process table nor forge packets
// on the bridge (raw sockets), and its output is kept within a bound; nothing of the host is
// mounted, nothing is privileged.
func hardened(restart container.RestartPolicy) *container.HostConfig {
	return &container.HostConfig{
		RestartPolicy: restart,
		Resources:     container.Resources{PidsLimit: ptr.To(pidsLimit)},
		SecurityOpt:   []string{"no-new-privileges"},
		CapDrop:       []string{"NET_RAW"},
		LogConfig:     container.LogConfig{Type: "local", Config: map[string]string{"max-size": "10m", "max-file": "3"}},
	}
}

// ensureNetwork makes the namespace's network, once: one pass at a time looks and makes (the
// Engine takes two networks of one name).
func (r *Reconciler) ensureNetwork(ctx context.Context, ns string) error {
	r.networks.Lock()
	defer r.networks.Unlock()
	if _, err := r.Docker.NetworkInspect(ctx, networkName(ns), network.InspectOptions{}); err == nil || !errdefs.IsNotFound(err) {
		return err
	}
	_, err := r.Docker.NetworkCreate(ctx, networkName(ns), network.CreateOptions{Driver: "bridge", Labels: map[string]string{LabelHost: r.Host, LabelNamespace: ns}})
	if errdefs.IsConflict(err) {
		return nil // made meanwhile by another pass
	}
	return err
}

// ensureVolumes makes the namespace's declared volumes that are not among those it has.
func (r *Reconciler) ensureVolumes(ctx context.Context, ns string, f compose.Fragment, have map[string]bool) error {
	for name, v := range f.Volumes {
		if have[name] {
			continue
		}
		labels := map[string]string{}
		for k, val := range v.Labels {
			labels[k] = val
		}
		for k, val := range map[string]string{LabelHost: r.Host, LabelNamespace: ns, LabelVolume: name} {
			labels[k] = val
		}
		if _, err := r.Docker.VolumeCreate(ctx, volume.CreateOptions{Name: volumeName(ns, name), Driver: "local", Labels: labels}); err != nil {
			return fmt.Errorf("volume %s: %w", name, err)
		}
	}
	return nil
}

// volumes are the namespace's volumes, by name.
func (r *Reconciler) volumes(ctx context.Context, ns string) (map[string]bool, error) {
	list, err := r.Docker.VolumeList(ctx, volume.ListOptions{Filters: filters.NewArgs(filters.Arg("label", LabelHost+"="+r.Host), filters.Arg("label", LabelNamespace+"="+ns), filters.Arg("label", LabelVolume))})
	if err != nil {
		return nil, fmt.Errorf("listing volumes: %w", err)
	}
	out := map[string]bool{}
	for _, v := range list.Volumes {
		out[v.Labels[LabelVolume]] = true
	}
	return out, nil
}

// removeVolumes removes, of the namespace's volumes, those no fragment declares any more:
// their claims were released with Delete.
func (r *Reconciler) removeVolumes(ctx context.Context, ns string, f compose.Fragment, have map[string]bool) error {
	var errs []error
	for name := range have {
		if _, ok := f.Volumes[name]; ok {
			continue
		}
		if err := r.Docker.VolumeRemove(ctx, volumeName(ns, name), false); err != nil && !errdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("removing volume %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

func (r *Reconciler) removeContainer(ctx context.Context, c container.InspectResponse) error {
	err := r.Docker.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true})
	if err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("removing container %s: %w", c.Name, err)
	}
	return nil
}

// dependencies are the Compose services the plan's claims run, judged as the plan's objects:
// a Workload is ready once its dependencies are, as on Kubernetes, where its claims wait for
// their objects' health.
func (r *Reconciler) dependencies(ctx context.Context, p *scorev1b1.WorkloadPlan) ([]scorev1b1.AppliedObject, error) {
	var names []string
	for _, c := range p.Spec.Claims {
		if c.Instance == "" {
			continue
		}
		s := &corev1.Secret{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: scorev1b1.ComposeSecretName(c.Instance)}, s)
		if apierrors.IsNotFound(err) {
			continue // not a Compose definition's instance
		}
		if err != nil {
			return nil, err
		}
		f, err := fragmentOf(s)
		if err != nil {
			return nil, fmt.Errorf("claim %s: %w", c.Key, err)
		}
		for name := range f.Services {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	sort.Strings(names)
	f, _, err := r.fragments(ctx, p.Namespace) // disagreements are the services pass's to report
	if err != nil {
		return nil, err
	}
	live, err := r.serviceContainers(ctx, p.Namespace)
	if err != nil {
		return nil, err
	}
	var out []scorev1b1.AppliedObject
	for i, name := range names {
		if i > 0 && names[i-1] == name {
			continue
		}
		o := scorev1b1.AppliedObject{Cluster: p.Spec.Cluster, APIVersion: "docker.score.dev/v1", Kind: "ComposeService", Name: name}
		c, ok := current(live[name], r.serviceHash(f, name))
		o.Health, o.Message = serviceHealth(f.Services[name], c, ok)
		if ok {
			o.UID = shortID(c.ID)
		}
		out = append(out, o)
	}
	return out, nil
}

// serviceHealth judges a service's container: running (and healthy, when it has a
// healthcheck) is Current, as is a one-shot service that completed; an exit or an unhealthy
// verdict is Failed.
func serviceHealth(s compose.Service, c container.InspectResponse, ok bool) (string, string) {
	if !ok || c.ContainerJSONBase == nil {
		return scorev1b1.HealthInProgress, "Not created yet."
	}
	st := c.State
	switch {
	case st == nil:
		return scorev1b1.HealthUnknown, "No state reported."
	case !st.Running && st.Status == "exited" && st.ExitCode == 0 && restartPolicy(s.Restart).Name != container.RestartPolicyAlways && restartPolicy(s.Restart).Name != container.RestartPolicyUnlessStopped:
		return scorev1b1.HealthCurrent, "Completed."
	case st.Restarting || !st.Running && (st.Status == "exited" || st.Status == "dead"):
		return scorev1b1.HealthFailed, fmt.Sprintf("Exited with code %d.", st.ExitCode)
	case !st.Running:
		return scorev1b1.HealthInProgress, "Created, not started yet."
	case st.Health == nil:
		return scorev1b1.HealthCurrent, "Running."
	case st.Health.Status == container.Healthy:
		return scorev1b1.HealthCurrent, "Running and healthy."
	case st.Health.Status == container.Unhealthy:
		return scorev1b1.HealthFailed, "Running, unhealthy."
	}
	return scorev1b1.HealthInProgress, "Running, its healthcheck has not passed yet."
}
