package dockerruntime

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/errdefs"
	"github.com/docker/go-connections/nat"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/compose"
)

// Engine is what the agent asks of the Docker Engine (the Engine API client has it).
type Engine interface {
	ContainerList(ctx context.Context, options container.ListOptions) ([]container.Summary, error)
	ContainerInspect(ctx context.Context, id string) (container.InspectResponse, error)
	ContainerCreate(ctx context.Context, config *container.Config, hostConfig *container.HostConfig, networkingConfig *network.NetworkingConfig, platform *ocispec.Platform, name string) (container.CreateResponse, error)
	CopyToContainer(ctx context.Context, id, dstPath string, content io.Reader, options container.CopyToContainerOptions) error
	ContainerStart(ctx context.Context, id string, options container.StartOptions) error
	ContainerRemove(ctx context.Context, id string, options container.RemoveOptions) error
	Events(ctx context.Context, options events.ListOptions) (<-chan events.Message, <-chan error)
	ServerVersion(ctx context.Context) (types.Version, error)
	NetworkInspect(ctx context.Context, networkID string, options network.InspectOptions) (network.Inspect, error)
	NetworkCreate(ctx context.Context, name string, options network.CreateOptions) (network.CreateResponse, error)
	VolumeCreate(ctx context.Context, options volume.CreateOptions) (volume.Volume, error)
	VolumeList(ctx context.Context, options volume.ListOptions) (volume.ListResponse, error)
	VolumeRemove(ctx context.Context, volumeID string, force bool) error
}

// Labels every container of the agent carries: whose it is and which version.
const (
	LabelHost      = "score.dev/host"
	LabelNamespace = "score.dev/namespace"
	LabelPlan      = "score.dev/plan"
	LabelPlanUID   = "score.dev/plan-uid"
	LabelHash      = "score.dev/project-hash"
	LabelContainer = "score.dev/container"
	// LabelOrder is the container's place in its set: 0 holds the network namespace.
	LabelOrder = "score.dev/order"
)

// pidsLimit bounds the processes of one container.
const pidsLimit int64 = 1024

// set is the containers of one version of a plan, by Score container name.
type set struct {
	hash       string
	containers map[string]container.InspectResponse
	owner      string // the Score name of the container that holds the network namespace
}

// sets lists a plan's containers, by version.
func (r *Reconciler) sets(ctx context.Context, p *scorev1b1.WorkloadPlan) (map[string]*set, error) {
	return r.list(ctx, filters.NewArgs(filters.Arg("label", LabelPlanUID+"="+string(p.UID))))
}

// set lists the containers of one version of a plan.
func (r *Reconciler) set(ctx context.Context, p *scorev1b1.WorkloadPlan, hash string) (*set, error) {
	sets, err := r.list(ctx, filters.NewArgs(filters.Arg("label", LabelPlanUID+"="+string(p.UID)), filters.Arg("label", LabelHash+"="+hash)))
	return sets[hash], err
}

func (r *Reconciler) list(ctx context.Context, f filters.Args) (map[string]*set, error) {
	containers, err := r.inspectAll(ctx, f)
	if err != nil {
		return nil, err
	}
	out := map[string]*set{}
	for _, c := range containers {
		hash := c.Config.Labels[LabelHash]
		if out[hash] == nil {
			out[hash] = &set{hash: hash, containers: map[string]container.InspectResponse{}}
		}
		name := c.Config.Labels[LabelContainer]
		out[hash].containers[name] = c
		if c.Config.Labels[LabelOrder] == "0" {
			out[hash].owner = name
		}
	}
	return out, nil
}

// inspectAll inspects the containers the filters select, those that exist still and whose
// state and labels the Engine gives.
func (r *Reconciler) inspectAll(ctx context.Context, f filters.Args) ([]container.InspectResponse, error) {
	summaries, err := r.Docker.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return nil, fmt.Errorf("listing containers: %w", err)
	}
	var out []container.InspectResponse
	for _, s := range summaries {
		c, err := r.Docker.ContainerInspect(ctx, s.ID)
		if errdefs.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("inspecting container %s: %w", s.ID, err)
		}
		if c.ContainerJSONBase != nil && c.Config != nil {
			out = append(out, c)
		}
	}
	return out, nil
}

// run creates and starts what of the project's containers is missing or not started, and
// reports whether it did anything. A container's name is its plan's and version's, so a pass
// that stopped half-way (a crash, an error) finds what it created and goes on from there.
func (r *Reconciler) run(ctx context.Context, p *scorev1b1.WorkloadPlan, project compose.Project, current *set) (changed bool, err error) {
	var ownerID string
	for i, c := range project.Containers {
		var existing container.InspectResponse
		ok, id := false, ""
		if current != nil {
			existing, ok = current.containers[c.Name]
		}
		if ok {
			id = existing.ID
		} else {
			created, err := r.create(ctx, p, project, i, ownerID)
			if err != nil {
				return true, fmt.Errorf("container %s: %w", c.Name, err)
			}
			id = created
		}
		if i == 0 {
			ownerID = id
		}
		if ok && existing.State != nil && existing.State.Status != "created" {
			continue // started once: its restart policy restarts it, and its exit is reported
		}
		changed = true
		if err := r.Docker.ContainerStart(ctx, id, container.StartOptions{}); err != nil {
			return true, fmt.Errorf("starting container %s: %w", c.Name, err)
		}
	}
	return changed, nil
}

// create creates container i of the project, with its files copied in; the first publishes
// the ports, the others join its network namespace.
func (r *Reconciler) create(ctx context.Context, p *scorev1b1.WorkloadPlan, project compose.Project, i int, ownerID string) (string, error) {
	c := project.Containers[i]
	labels := map[string]string{
		LabelHost: r.Host, LabelNamespace: p.Namespace, LabelPlan: p.Name, LabelPlanUID: string(p.UID),
		LabelHash: project.Hash, LabelContainer: c.Name, LabelOrder: strconv.Itoa(i),
		scorev1b1.LabelWorkload: p.Spec.WorkloadRef.Name, scorev1b1.AnnotationWorkloadUID: p.Spec.WorkloadRef.UID,
		"score.dev/generation": strconv.FormatInt(p.Generation, 10),
	}
	config := &container.Config{Image: c.Image, Env: c.Env, Entrypoint: c.Entrypoint, Cmd: c.Cmd, Labels: labels}
	host := hardened(container.RestartPolicy{Name: container.RestartPolicyUnlessStopped})
	host.Memory, host.NanoCPUs = c.Memory, c.NanoCPUs
	var endpoints *network.NetworkingConfig
	if i == 0 {
		// On the namespace's network, where its Compose services answer by their names.
		if err := r.ensureNetwork(ctx, p.Namespace); err != nil {
			return "", err
		}
		host.NetworkMode = container.NetworkMode(networkName(p.Namespace))
		endpoints = &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{networkName(p.Namespace): {}}}
		config.ExposedPorts, host.PortBindings = nat.PortSet{}, nat.PortMap{}
		for _, port := range project.Ports {
			key := nat.Port(fmt.Sprintf("%d/%s", port.TargetPort, port.Protocol))
			config.ExposedPorts[key] = struct{}{}
			host.PortBindings[key] = append(host.PortBindings[key], nat.PortBinding{HostIP: r.Address})
		}
	} else {
		host.NetworkMode = container.NetworkMode("container:" + ownerID)
	}
	name := containerName(p, project.Hash, c.Name)
	created, err := r.Docker.ContainerCreate(ctx, config, host, endpoints, nil, name)
	if err != nil {
		return "", err
	}
	return created.ID, r.copyFiles(ctx, created.ID, c.Files)
}

// copyFiles copies files into a container created and not started; if it cannot, the
// container is removed, not left created: a later pass would start it without its files.
func (r *Reconciler) copyFiles(ctx context.Context, id string, files []compose.File) error {
	if len(files) == 0 {
		return nil
	}
	archive, err := tarOf(files)
	if err == nil {
		err = r.Docker.CopyToContainer(ctx, id, "/", archive, container.CopyToContainerOptions{})
	}
	if err != nil {
		rmErr := r.Docker.ContainerRemove(context.WithoutCancel(ctx), id, container.RemoveOptions{Force: true})
		return errors.Join(fmt.Errorf("copying the files in: %w", err), rmErr)
	}
	return nil
}

// containerName is unique per plan (namespace and name), version and container.
func containerName(p *scorev1b1.WorkloadPlan, hash, name string) string {
	return strings.Join([]string{"score", p.Namespace, p.Name, name, hash[:8]}, "_")
}

// tarOf is the files as an archive rooted at /.
func tarOf(files []compose.File) (io.Reader, error) {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(f.Target, "/"), Mode: f.Mode, Size: int64(len(f.Content)), Typeflag: tar.TypeReg}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.Content); err != nil {
			return nil, err
		}
	}
	return &b, tw.Close()
}

// remove removes a set's containers, the joined ones before their network's owner.
func (r *Reconciler) remove(ctx context.Context, s *set) error {
	names := make([]string, 0, len(s.containers))
	for name := range s.containers {
		if name != s.owner {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	if s.owner != "" {
		names = append(names, s.owner)
	}
	for _, name := range names {
		err := r.Docker.ContainerRemove(ctx, s.containers[name].ID, container.RemoveOptions{Force: true})
		if err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("removing container %s: %w", name, err)
		}
	}
	return nil
}

// judged is the health of a version's containers.
type judged struct {
	health map[string]string // Score container name → Current, InProgress, Failed
	msg    map[string]string
	ids    map[string]string
	names  []string
	ready  bool
	// probing is a container running and not ready yet.
	probing bool
	// ports are the host ports its owner publishes, by target port and protocol.
	ports map[string]string
	proj  compose.Project
}

// judge judges each container of the version: running and ready (its readiness probe
// answers, or it has none) is Current; created or not ready yet InProgress; exited or
// restarting after an exit Failed, with its exit code.
func (r *Reconciler) judge(ctx context.Context, project compose.Project, s *set) judged {
	j := judged{health: map[string]string{}, msg: map[string]string{}, ids: map[string]string{}, ready: true, proj: project}
	var ownerIP string
	if s != nil {
		if owner, ok := s.containers[s.owner]; ok {
			ownerIP, j.ports = addressOf(owner), publishedPorts(owner)
		}
	}
	for _, c := range project.Containers {
		j.names = append(j.names, c.Name)
		var live container.InspectResponse
		ok := false
		if s != nil {
			live, ok = s.containers[c.Name]
		}
		health, msg := scorev1b1.HealthInProgress, "Not created yet."
		if ok {
			j.ids[c.Name] = live.ID
			health, msg = r.containerHealth(ctx, c, live, ownerIP)
			if health == scorev1b1.HealthInProgress && live.State != nil && live.State.Running {
				j.probing = true
			}
		}
		j.health[c.Name], j.msg[c.Name] = health, msg
		j.ready = j.ready && health == scorev1b1.HealthCurrent
	}
	return j
}

func (r *Reconciler) containerHealth(ctx context.Context, c compose.Container, live container.InspectResponse, ip string) (string, string) {
	st := live.State
	switch {
	case st == nil:
		return scorev1b1.HealthUnknown, "No state reported."
	case st.Restarting || !st.Running && st.Status == "exited" || st.Status == "dead":
		msg := fmt.Sprintf("Exited with code %d", st.ExitCode)
		if st.OOMKilled {
			msg += " (out of memory)"
		}
		if live.RestartCount > 0 {
			msg += fmt.Sprintf("; restarted %d times", live.RestartCount)
		}
		return scorev1b1.HealthFailed, msg + "."
	case !st.Running:
		return scorev1b1.HealthInProgress, "Created, not started yet."
	case c.Ready == nil:
		return scorev1b1.HealthCurrent, "Running."
	}
	if err := r.probe(ctx, ip, *c.Ready); err != nil {
		return scorev1b1.HealthInProgress, "Running, not ready: " + err.Error()
	}
	return scorev1b1.HealthCurrent, "Running and ready."
}

// probe makes a readiness probe's request from the host to the container's address.
func (r *Reconciler) probe(ctx context.Context, ip string, pr compose.HTTPProbe) error {
	if ip == "" {
		return fmt.Errorf("the container has no address to probe")
	}
	target, err := probeURL(ip, pr)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return err
	}
	resp, err := r.Probe.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s on port %d: no answer", pr.Path, pr.Port)
	}
	_ = resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		return fmt.Errorf("GET %s on port %d answered %d", pr.Path, pr.Port, resp.StatusCode)
	}
	return nil
}

// probeURL is the URL of a readiness probe of the container at ip: the host is always the
// container's, whatever the Workload's path says (a path is attacker-controlled: one that
// does not start with / would name another host, as in "@169.254.169.254/").
func probeURL(ip string, pr compose.HTTPProbe) (string, error) {
	if !strings.HasPrefix(pr.Path, "/") {
		return "", fmt.Errorf("the probe's path %q does not start with /", pr.Path)
	}
	path, query, _ := strings.Cut(pr.Path, "?")
	u := url.URL{Scheme: pr.Scheme, Host: net.JoinHostPort(ip, strconv.Itoa(pr.Port)), Path: path, RawQuery: query}
	return u.String(), nil
}

// NewProbeClient is the client of the readiness probes: it goes to the container only (no
// proxy, no redirect followed), answers within a second, and, as the kubelet, does not verify
// an HTTPS probe's certificate.
func NewProbeClient() *http.Client {
	return &http.Client{
		Timeout:       time.Second,
		Transport:     &http.Transport{Proxy: nil, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true}, //nolint:gosec // as the kubelet's probes
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// addressOf is a container's address on its network, as the host reaches it.
func addressOf(c container.InspectResponse) string {
	if c.NetworkSettings == nil {
		return ""
	}
	for _, n := range c.NetworkSettings.Networks {
		if n != nil && n.IPAddress != "" {
			return n.IPAddress
		}
	}
	return ""
}

// publishedPorts are the host ports a container publishes, by "target/protocol".
func publishedPorts(c container.InspectResponse) map[string]string {
	out := map[string]string{}
	if c.NetworkSettings == nil {
		return out
	}
	for port, bindings := range c.NetworkSettings.Ports {
		if len(bindings) > 0 {
			out[string(port)] = bindings[0].HostPort
		}
	}
	return out
}

// objects is the plan's inventory: the version's containers, on the plan's host.
func (j judged) objects(host string) []scorev1b1.AppliedObject {
	var out []scorev1b1.AppliedObject
	for _, name := range j.names {
		out = append(out, scorev1b1.AppliedObject{Cluster: host, APIVersion: "docker.score.dev/v1", Kind: "Container", Name: name, UID: shortID(j.ids[name]), Health: j.health[name], Message: j.msg[name]})
	}
	return out
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// anyServing reports whether an older version still runs its network's owner.
func anyServing(older []*set) bool {
	for _, s := range older {
		if owner, ok := s.containers[s.owner]; ok && owner.State != nil && owner.State.Running {
			return true
		}
	}
	return false
}

// endpointsOf are the endpoints of the version that serves: the new one once ready, before
// that an older one that runs, else the new one's (becoming ready).
func (r *Reconciler) endpointsOf(j judged, older []*set) []scorev1b1.Exposure {
	ports := j.ports
	if !j.ready {
		for _, s := range older {
			if owner, ok := s.containers[s.owner]; ok && owner.State != nil && owner.State.Running {
				ports = publishedPorts(owner)
				break
			}
		}
	}
	var out []scorev1b1.Exposure
	for i, port := range j.proj.Ports {
		hostPort := ports[fmt.Sprintf("%d/%s", port.TargetPort, port.Protocol)]
		if hostPort == "" {
			continue
		}
		scheme, hint := "http", "HTTP"
		if port.Protocol != "tcp" {
			scheme, hint = port.Protocol, "OTHER"
		}
		out = append(out, scorev1b1.Exposure{URL: scheme + "://" + net.JoinHostPort(r.Address, hostPort), Priority: int32(len(j.proj.Ports) - i), SchemeHint: hint})
	}
	return out
}
