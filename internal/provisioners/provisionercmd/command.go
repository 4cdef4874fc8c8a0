// Package provisionercmd runs cmd:// provisioners with score-k8s's contract: the binary named
// by the uri is run with the definition's args, gets one JSON document on stdin
// (resource_uid, resource_params, resource_state, shared_state, ...) and prints one JSON
// document on stdout (resource_outputs, resource_state, shared_state, manifests).
//
// A controller is not a developer's shell, so three things differ from score-k8s, each on
// purpose: only absolute paths and names on PATH are run (cmd://./x, cmd://../x and cmd://~/x
// resolve against the controller's working directory or home, which mean nothing in a
// container); the command gets a minimal environment (PATH, and HOME and TMPDIR pointing to a
// scratch directory removed after the run), never the controller's; and a run is bounded in
// time and in output size.
package provisionercmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/provisioners/provisioning"
)

// Input is the document a command reads on stdin; the keys are score-k8s's.
type Input struct {
	ResourceGuid     string                    `json:"resource_guid"`
	ResourceUid      string                    `json:"resource_uid"`
	ResourceType     string                    `json:"resource_type"`
	ResourceClass    string                    `json:"resource_class"`
	ResourceId       string                    `json:"resource_id"`
	ResourceParams   map[string]any            `json:"resource_params"`
	ResourceMetadata map[string]any            `json:"resource_metadata"`
	SourceWorkload   string                    `json:"source_workload"`
	WorkloadMetadata map[string]any            `json:"workload_metadata"`
	WorkloadServices map[string]NetworkService `json:"workload_services"`
	Namespace        string                    `json:"namespace"`
	ResourceState    map[string]any            `json:"resource_state"`
	SharedState      map[string]any            `json:"shared_state"`
}

// NetworkService is another workload's service as score-k8s encodes it. score-k8s tags
// ServiceName for YAML only, so its JSON key is "ServiceName"; kept, so that commands written
// for score-k8s read it where they expect it.
type NetworkService struct {
	ServiceName string                 `json:"ServiceName"`
	Ports       map[string]ServicePort `json:"ports"`
}

// ServicePort is one port of a NetworkService.
type ServicePort struct {
	Name       string `json:"name"`
	Port       int    `json:"port"`
	TargetPort int    `json:"target_port"`
	Protocol   string `json:"protocol"`
}

// Output is the document a command prints on stdout; unknown keys are an error, as in
// score-k8s.
type Output struct {
	ResourceState   map[string]any   `json:"resource_state"`
	ResourceOutputs map[string]any   `json:"resource_outputs"`
	SharedState     map[string]any   `json:"shared_state"`
	Manifests       []map[string]any `json:"manifests"`
}

// Limits bound one run.
type Limits struct {
	// Timeout ends a run that takes longer, killing its whole process group.
	Timeout time.Duration
	// MaxOutput is the most stdout a run may print, in bytes.
	MaxOutput int
}

// DefaultLimits are the limits a controller uses unless told otherwise.
var DefaultLimits = Limits{Timeout: 2 * time.Minute, MaxOutput: 4 << 20}

// ErrNotRunnable is wrapped by every error that says a uri names nothing the controller may
// run: the provisioning package's, so callers check one sentinel.
var ErrNotRunnable = provisioning.ErrNotRunnable

// Resolve finds the binary a cmd:// uri names: cmd:///abs/path is that path, cmd://name is
// name looked up on PATH (any fragment, such as cmd://bash#dotenv, only names the definition).
func Resolve(uri string, lookPath func(string) (string, error)) (string, error) {
	u, err := url.Parse(uri)
	switch {
	case err != nil:
		return "", fmt.Errorf("%w: %q is not a uri: %v", ErrNotRunnable, uri, err)
	case u.Scheme != "cmd":
		return "", fmt.Errorf("%w: %q is not a cmd:// uri", ErrNotRunnable, uri)
	case u.User != nil || u.RawQuery != "" || u.Port() != "":
		return "", fmt.Errorf("%w: a cmd:// uri has no user, port or query", ErrNotRunnable)
	}
	host := u.Hostname()
	switch host {
	case "":
		p := filepath.Clean(u.Path)
		if u.Path == "" || p == "/" {
			return "", fmt.Errorf("%w: cmd:/// needs an absolute path to a binary", ErrNotRunnable)
		}
		return p, nil
	case ".", "..", "~":
		return "", fmt.Errorf("%w: cmd://%s/... resolves against the controller's working directory or home, which a controller does not have; name a binary on PATH (cmd://bash) or an absolute path (cmd:///opt/provisioners/dns)", ErrNotRunnable, host)
	}
	if u.Path != "" && u.Path != "/" {
		return "", fmt.Errorf("%w: cmd://%s names a binary on PATH and takes no path (%s)", ErrNotRunnable, host, u.Path)
	}
	bin, err := lookPath(host)
	if err != nil {
		return "", fmt.Errorf("%w: %s is not on the controller's PATH", ErrNotRunnable, host)
	}
	return bin, nil
}

// NewInput builds the stdin document from the data templates see.
func NewInput(d provisioning.Data) Input {
	in := Input{
		ResourceGuid: d.Guid, ResourceUid: d.Uid, ResourceType: d.Type, ResourceClass: d.Class, ResourceId: d.Id,
		ResourceParams: nilIfEmpty(d.Params), ResourceMetadata: nilIfEmpty(d.Metadata),
		SourceWorkload: d.SourceWorkload, WorkloadMetadata: d.WorkloadMetadata, Namespace: d.Namespace,
		ResourceState: d.State, SharedState: d.Shared,
		WorkloadServices: make(map[string]NetworkService, len(d.WorkloadServices)),
	}
	if in.ResourceState == nil {
		in.ResourceState = map[string]any{}
	}
	if in.SharedState == nil {
		in.SharedState = map[string]any{}
	}
	for name, s := range d.WorkloadServices {
		ns := NetworkService{ServiceName: s.ServiceName, Ports: make(map[string]ServicePort, len(s.Ports))}
		for k, p := range s.Ports {
			ns.Ports[k] = ServicePort{Name: p.Name, Port: p.Port, TargetPort: p.TargetPort, Protocol: p.Protocol}
		}
		in.WorkloadServices[name] = ns
	}
	return in
}

// score-k8s passes no params and no metadata as null.
func nilIfEmpty(m map[string]any) map[string]any {
	if len(m) == 0 {
		return nil
	}
	return m
}

// Run runs bin with args, the input on stdin, within lim, and decodes what it printed. Args
// "<mode>" become "provision", as in score-k8s.
func Run(ctx context.Context, bin string, args []string, in Input, lim Limits) (provisioning.Result, error) {
	raw, err := json.Marshal(in)
	if err != nil {
		return provisioning.Result{}, fmt.Errorf("encoding the input: %w", err)
	}
	scratch, err := os.MkdirTemp("", "score-cmd-")
	if err != nil {
		return provisioning.Result{}, fmt.Errorf("creating a scratch directory: %w", err)
	}
	defer func() { _ = os.RemoveAll(scratch) }()

	ctx, cancel := context.WithTimeout(ctx, lim.Timeout)
	defer cancel()
	argv := make([]string, len(args))
	for i, a := range args {
		if a == "<mode>" {
			a = "provision"
		}
		argv[i] = a
	}
	cmd := exec.CommandContext(ctx, bin, argv...)
	cmd.Dir = scratch
	// Never the controller's environment: it may hold credentials.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + scratch, "TMPDIR=" + scratch}
	cmd.Stdin = bytes.NewReader(raw)
	stdout := &boundedBuffer{max: lim.MaxOutput, exceeded: cancel}
	stderr := &tailBuffer{max: 4096}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	killProcessGroup(cmd)
	// Children that keep stdout open must not hold the run past the kill.
	cmd.WaitDelay = 2 * time.Second

	runErr := cmd.Run()
	switch {
	case stdout.over:
		return provisioning.Result{}, fmt.Errorf("%s printed more than %d bytes", bin, lim.MaxOutput)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return provisioning.Result{}, fmt.Errorf("%s did not finish within %s", bin, lim.Timeout)
	case runErr != nil:
		var exit *exec.ExitError
		if errors.As(runErr, &exit) {
			return provisioning.Result{}, fmt.Errorf("%s exited with status %d%s", bin, exit.ExitCode(), stderr.lastLine())
		}
		return provisioning.Result{}, fmt.Errorf("running %s: %w", bin, runErr)
	}
	return Decode(stdout.Bytes())
}

// Decode reads a command's stdout document, strictly as score-k8s does.
func Decode(stdout []byte) (provisioning.Result, error) {
	var out Output
	dec := json.NewDecoder(bytes.NewReader(stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		return provisioning.Result{}, fmt.Errorf("the command's output is not a provisioner result: %w", err)
	}
	if err := provisioning.CheckManifests(out.Manifests); err != nil {
		return provisioning.Result{}, err
	}
	// score-k8s always replaces the state (none means empty) and patches the shared state.
	r := provisioning.Result{State: out.ResourceState, Shared: out.SharedState, Outputs: out.ResourceOutputs, Manifests: out.Manifests}
	if r.State == nil {
		r.State = map[string]any{}
	}
	if r.Outputs == nil {
		r.Outputs = map[string]any{}
	}
	return r, nil
}

// boundedBuffer keeps at most max bytes and ends the run when more arrive. It does not embed
// bytes.Buffer on purpose: io.Copy would use the promoted ReadFrom and bypass the bound.
type boundedBuffer struct {
	buf      []byte
	max      int
	over     bool
	exceeded func()
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if len(b.buf)+len(p) > b.max {
		b.over = true
		b.exceeded()
		return 0, errors.New("output limit exceeded")
	}
	b.buf = append(b.buf, p...)
	return len(p), nil
}

func (b *boundedBuffer) Bytes() []byte { return b.buf }

// tailBuffer keeps the last max bytes written.
type tailBuffer struct {
	buf []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(p), nil
}

// lastLine is ": " and the last non-empty line of stderr, at most 200 bytes, or "". A command
// says why it failed there; it must not print secrets to stderr.
func (t *tailBuffer) lastLine() string {
	lines := strings.Split(strings.TrimSpace(string(t.buf)), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if last == "" {
		return ""
	}
	if len(last) > 200 {
		last = last[:200] + "..."
	}
	return ": " + last
}

// Runner runs cmd:// definitions within lim (zero fields take DefaultLimits), each binary
// resolved on the controller's PATH or by its absolute path: the provisioner's
// provisioning.Env.Command.
func Runner(lim Limits) func(context.Context, orchconfig.Provisioner, provisioning.Data) (provisioning.Result, error) {
	if lim.Timeout <= 0 {
		lim.Timeout = DefaultLimits.Timeout
	}
	if lim.MaxOutput <= 0 {
		lim.MaxOutput = DefaultLimits.MaxOutput
	}
	return func(ctx context.Context, def orchconfig.Provisioner, data provisioning.Data) (provisioning.Result, error) {
		bin, err := Resolve(def.URI, exec.LookPath)
		if err != nil {
			return provisioning.Result{}, err
		}
		ctrl.LoggerFrom(ctx).V(1).Info("Running a command provisioner", "binary", bin, "timeout", lim.Timeout)
		return Run(ctx, bin, def.Args, NewInput(data), lim)
	}
}
