// Package controllerproc runs a controller Deployment's container as a local process on a
// simulated cluster (kwok runs no containers), as the kubelet would: its arguments, under a
// token of its ServiceAccount, with local ports for metrics and probes. It also reads what the
// controllers wrote from the API server's audit log. The install, failover and kustomize tests
// use it.
package controllerproc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
)

// Process is one replica of a Deployment's container, run here.
type Process struct {
	// Name is the Deployment's, with the replica's suffix when there are several.
	Name string
	// Log is the file holding its output.
	Log   string
	cmd   *exec.Cmd
	ports map[string]int
	done  chan error
}

// Start runs replica of Deployment d (replica "" for a Deployment of one) as Launch does, and
// stops it when the test ends.
func Start(t *testing.T, cfg *rest.Config, bin, dir string, d *appsv1.Deployment, replica string, env ...string) *Process {
	t.Helper()
	p, err := Launch(cfg, bin, dir, d, replica, env...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(10 * time.Second) })
	return p
}

// Launch runs replica of Deployment d (replica "" for a Deployment of one) from the
// score-controllers binary bin, with its state (kubeconfig, log, OCI cache) in dir, and waits
// until it answers /readyz; env are more NAME=value entries of its environment (a CA bundle it
// must trust, say). The caller stops it.
//
// Its metrics and probe ports are free when chosen, but another process (a test package running
// beside this one) may take one before the controller binds it; the controller then exits, and
// is started again on other ports.
func Launch(cfg *rest.Config, bin, dir string, d *appsv1.Deployment, replica string, env ...string) (*Process, error) {
	name := d.Name
	if replica != "" {
		name += "-" + replica
	}
	sa := d.Spec.Template.Spec.ServiceAccountName
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	tok, err := kube.CoreV1().ServiceAccounts(d.Namespace).CreateToken(context.Background(), sa,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("a token for %s: %w", sa, err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["cluster"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthority: cfg.CAFile, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[sa] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	kc.Contexts[sa] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: sa, Namespace: d.Namespace}
	kc.CurrentContext = sa
	kcPath := filepath.Join(dir, name+".kubeconfig")
	if err := clientcmd.WriteToFile(*kc, kcPath); err != nil {
		return nil, err
	}
	args := append(slices.Clone(d.Spec.Template.Spec.Containers[0].Args),
		"--kubeconfig="+kcPath, "--oci-cache-dir="+filepath.Join(dir, name+"-oci"))

	for attempt := 1; ; attempt++ {
		metrics, err := freePort()
		if err != nil {
			return nil, err
		}
		health, err := freePort()
		if err != nil {
			return nil, err
		}
		p := &Process{Name: name, Log: filepath.Join(dir, name+".log"), ports: map[string]int{"metrics": metrics, "health": health}, done: make(chan error, 1)}
		if err := p.start(bin, env, append(slices.Clone(args),
			"--metrics-bind-address=127.0.0.1:"+strconv.Itoa(metrics),
			"--health-probe-bind-address=127.0.0.1:"+strconv.Itoa(health))); err != nil {
			return nil, err
		}
		err = p.waitReady(2 * time.Minute)
		if err == nil {
			return p, nil
		}
		_ = p.Stop(10 * time.Second)
		if attempt < 3 && strings.Contains(p.LogTail(), "address already in use") {
			continue // a port was taken before it bound it: on other ports
		}
		return nil, fmt.Errorf("%s: %w\n%s", name, err, p.LogTail())
	}
}

func (p *Process) start(bin string, env, args []string) error {
	logFile, err := os.Create(p.Log)
	if err != nil {
		return err
	}
	p.cmd = exec.Command(bin, args...)
	// Nothing of the test's environment (no KUBECONFIG): the token is its only credential.
	p.cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Dir(p.Log)}, env...)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if err := p.cmd.Start(); err != nil {
		_ = logFile.Close()
		return err
	}
	go func() { p.done <- p.cmd.Wait(); _ = logFile.Close() }()
	return nil
}

// waitReady waits until the process answers /readyz; its exit is an error at once.
func (p *Process) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if err := p.Exited(); err != nil {
			return err
		}
		_, err := p.Get("health", "/readyz")
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %s: %w", timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Exited is nil while the process runs, and says how it ended once it has.
func (p *Process) Exited() error {
	select {
	case err := <-p.done:
		p.done <- err // for Stop, Kill and the next caller
		if err == nil {
			return errors.New("exited")
		}
		return fmt.Errorf("exited: %w", err)
	default:
		return nil
	}
}

// Stop sends SIGTERM and waits for the process to exit; an exit other than 0 is an error.
func (p *Process) Stop(grace time.Duration) error {
	if p.cmd.ProcessState != nil {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		if err != nil {
			return fmt.Errorf("exit after SIGTERM: %w", err)
		}
		return nil
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("still running %s after SIGTERM", grace)
	}
}

// RSS is the process's resident memory now, in bytes (VmRSS of /proc/PID/status).
func (p *Process) RSS() (int64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmRSS in /proc/PID/status")
}

// Kill ends the process with SIGKILL, as a node going away does: no shutdown, no lease handed
// back.
func (p *Process) Kill() {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// httpClient gives up on a process that accepts a connection and does not answer.
var httpClient = &http.Client{Timeout: 5 * time.Second}

// Get reads path from the process's "metrics" or "health" port; a status other than 200 is an
// error.
func (p *Process) Get(port, path string) (string, error) {
	resp, err := httpClient.Get(fmt.Sprintf("http://127.0.0.1:%d%s", p.ports[port], path))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", path, resp.Status)
	}
	return string(body), nil
}

// Leads reports whether the process holds its leader lease (client-go's
// leader_election_master_status metric).
func (p *Process) Leads() bool {
	text, err := p.Get("metrics", "/metrics")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "leader_election_master_status{") && strings.HasSuffix(line, " 1") {
			return true
		}
	}
	return false
}

// LogTail is the end of the process's output.
func (p *Process) LogTail() string {
	raw, _ := os.ReadFile(p.Log)
	if len(raw) > 4000 {
		raw = raw[len(raw)-4000:]
	}
	return string(raw)
}

// LogTails is the end of each process's output.
func LogTails[M ~map[string]*Process](procs M) string {
	var b strings.Builder
	for _, p := range procs {
		fmt.Fprintf(&b, "--- %s\n%s\n", p.Name, p.LogTail())
	}
	return b.String()
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Audit is the API server's audit records of writes (a cluster started with AuditWrites).
type Audit []AuditEvent

// AuditEvent is one write.
type AuditEvent struct {
	Verb  string `json:"verb"`
	Stage string `json:"stage"`
	User  struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	StageTimestamp metav1.MicroTime `json:"stageTimestamp"`
}

// ReadAudit reads the audit log at path: the completed requests on objects.
func ReadAudit(t *testing.T, path string) Audit {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out Audit
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e AuditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		if e.Stage == "ResponseComplete" && e.ObjectRef != nil {
			out = append(out, e)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// LastWrite is when a service account of ns last wrote anything but a Lease.
func (a Audit) LastWrite(ns string) time.Time {
	var last time.Time
	for _, e := range a {
		if strings.HasPrefix(e.User.Username, "system:serviceaccount:"+ns+":") && e.ObjectRef.Resource != "leases" && e.StageTimestamp.After(last) {
			last = e.StageTimestamp.Time
		}
	}
	return last
}

// WritesBy lists the writes user made after since, as "resource[/subresource] verb
// namespace/name".
func (a Audit) WritesBy(user string, since time.Time) []string {
	var out []string
	for _, e := range a {
		if e.User.Username != user || e.StageTimestamp.Time.Before(since) {
			continue
		}
		res := e.ObjectRef.Resource
		if e.ObjectRef.Subresource != "" {
			res += "/" + e.ObjectRef.Subresource
		}
		out = append(out, fmt.Sprintf("%s %s %s/%s", res, e.Verb, e.ObjectRef.Namespace, e.ObjectRef.Name))
	}
	return out
}
