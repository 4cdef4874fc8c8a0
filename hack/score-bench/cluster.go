package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/score-orchestrator/score-orchestrator/internal/cli/devenv"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/controlplane"
	"github.com/score-orchestrator/score-orchestrator/internal/shard"
)

// grow adds what n Workloads need beyond the two nodes and the /20 of Service IPs that
// hack/cluster.sh gives: fake nodes with their own pod ranges (kwok takes pod IPs from a
// node's podCIDR), and a /16 of Service IPs. The two default nodes are cordoned so that every
// pod gets an address from a range large enough.
func grow(ctx context.Context, c client.Client, pods int) (int, error) {
	const perNode = 1000
	nodes := pods/perNode + 2
	for i := range nodes {
		qty := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000"), corev1.ResourceMemory: resource.MustParse("4Ti"), corev1.ResourcePods: resource.MustParse(strconv.Itoa(perNode))}
		n := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-node-%d", i),
				Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
				Labels:      map[string]string{"kubernetes.io/hostname": fmt.Sprintf("bench-node-%d", i), "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", "type": "kwok"}},
			Spec:   corev1.NodeSpec{PodCIDR: fmt.Sprintf("10.%d.0.0/21", 200+i), PodCIDRs: []string{fmt.Sprintf("10.%d.0.0/21", 200+i)}},
			Status: corev1.NodeStatus{Allocatable: qty, Capacity: qty},
		}
		if err := c.Create(ctx, n); err != nil {
			return 0, fmt.Errorf("creating node %s: %w", n.Name, err)
		}
	}
	for _, name := range []string{"kwok-node-0", "kwok-node-1"} {
		n := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			return 0, err
		}
		patch := client.MergeFrom(n.DeepCopy())
		n.Spec.Unschedulable = true
		if err := c.Patch(ctx, n, patch); err != nil {
			return 0, err
		}
	}
	cidr := &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "score-bench"}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.112.0.0/16"}}}
	if err := c.Create(ctx, cidr); err != nil {
		return 0, fmt.Errorf("adding Service IPs: %w", err)
	}
	return nodes, nil
}

// controller is one controller process.
type controller struct {
	// name tells the process apart (the controller, and its shard); controllers is its
	// --controllers, selector its --watch-label-selector.
	name, controllers, selector string
	bin, dir                    string
	args                        []string
	pprofAddr                   string
	cmd                         *exec.Cmd
	exited                      chan struct{}
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// start runs the controller as production does: its own process, leader election on.
func (p *controller) start(kubeconfig string) error {
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	p.pprofAddr = addr
	logFile, err := os.OpenFile(filepath.Join(p.dir, "score-"+p.name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	args := []string{"--controllers=" + p.controllers}
	if p.selector != "" {
		args = append(args, "--watch-label-selector="+p.selector)
	}
	args = append(append(args, "--leader-elect", "--kubeconfig="+kubeconfig,
		"--metrics-bind-address=0", "--health-probe-bind-address=0", "--pprof-bind-address="+addr), p.args...)
	p.cmd = exec.Command(p.bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("starting the %s: %w", p.name, err)
	}
	p.exited = make(chan struct{})
	go func() { _ = p.cmd.Wait(); logFile.Close(); close(p.exited) }()
	return nil
}

// stop ends the process gracefully (SIGTERM; SIGKILL after 30 s).
func (p *controller) stop() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// procUsage is a process's CPU time and peak resident memory, from /proc.
type procUsage struct {
	CPUSeconds float64 `json:"cpuSeconds"`
	PeakRSSMiB float64 `json:"peakRssMiB"`
}

// usage reads the controller's process from /proc.
func (p *controller) usage() (procUsage, error) {
	return readProc(fmt.Sprintf("/proc/%d", p.cmd.Process.Pid))
}

// readProc reads a process's CPU and peak RSS from its /proc directory: stat (utime+stime)
// and status (VmHWM).
func readProc(dir string) (procUsage, error) {
	stat, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return procUsage{}, err
	}
	status, err := os.ReadFile(filepath.Join(dir, "status"))
	if err != nil {
		return procUsage{}, err
	}
	return parseProc(string(stat), string(status))
}

// cpuSince is now with the CPU seconds of base subtracted, process by process.
func cpuSince(now, base map[string]procUsage) map[string]procUsage {
	for name, u := range now {
		u.CPUSeconds -= base[name].CPUSeconds
		now[name] = u
	}
	return now
}

// selfCPUSeconds is this process's CPU time so far (0 when /proc cannot tell).
func selfCPUSeconds() float64 {
	u, _ := readProc("/proc/self")
	return u.CPUSeconds
}

// parseProc reads CPU seconds (clock ticks of 1/100 s) and VmHWM from /proc files.
func parseProc(stat, status string) (procUsage, error) {
	// The command name (field 2) may hold spaces; the fields after it are plain.
	rest := stat[strings.LastIndexByte(stat, ')')+1:]
	f := strings.Fields(rest)
	if len(f) < 13 {
		return procUsage{}, fmt.Errorf("short /proc stat %q", stat)
	}
	utime, err1 := strconv.ParseFloat(f[11], 64)
	stime, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return procUsage{}, fmt.Errorf("bad /proc stat %q", stat)
	}
	u := procUsage{CPUSeconds: (utime + stime) / 100}
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err != nil {
				return procUsage{}, fmt.Errorf("bad VmHWM %q", line)
			}
			u.PeakRSSMiB = kb / 1024
		}
	}
	return u, nil
}

// waitLeaders waits until each controller holds its lease (its shard's).
func waitLeaders(ctx context.Context, c client.Client, since time.Time, ctrls []*controller) error {
	deadline := time.Now().Add(2 * time.Minute)
	for _, p := range ctrls {
		sel, err := shard.Selector(p.selector)
		if err != nil {
			return err
		}
		lease := controlplane.Leases([]string{p.controllers}, sel)[0]
		for {
			l := &coordinationv1.Lease{}
			err := c.Get(ctx, client.ObjectKey{Namespace: devenv.SystemNamespace, Name: lease}, l)
			if err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" && l.Spec.AcquireTime != nil && !l.Spec.AcquireTime.Time.Before(since.Truncate(time.Second)) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the %s took no lease within 2 minutes", p.name)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return nil
}

// clusterPrograms are the simulated cluster's long-running processes.
var clusterPrograms = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok-controller"}

// exited names the run's processes that are gone: the controllers that exited (with the last
// line of their log) and the cluster's programs running at the start (clusterAtStart) that no
// longer are (clusterNow).
func exited(ctrls []*controller, clusterAtStart, clusterNow map[string]procUsage) []string {
	var out []string
	for _, p := range ctrls {
		select {
		case <-p.exited: // a nil channel (never started) is not ready
			out = append(out, fmt.Sprintf("the %s (%s)", p.name, lastLine(filepath.Join(p.dir, "score-"+p.name+".log"))))
		default:
		}
	}
	for _, name := range clusterPrograms {
		_, was := clusterAtStart[name]
		if _, is := clusterNow[name]; was && !is {
			out = append(out, name)
		}
	}
	return out
}

// lastLine is the last line of a file, at most 300 bytes of it.
func lastLine(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	line := lines[len(lines)-1]
	if len(line) > 300 {
		line = line[:300] + "…"
	}
	return line
}

// clusterUsage reads the CPU and peak RSS of the cluster's own processes (those whose command
// line names the benchmark's directory), by program name.
func clusterUsage(dir string) map[string]procUsage {
	out := map[string]procUsage{}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		cmdline, err := os.ReadFile(filepath.Join(p, "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), dir) {
			continue
		}
		argv0, _, _ := strings.Cut(string(cmdline), "\x00")
		name := filepath.Base(argv0)
		if name == "score-controllers" || name == "score-bench" {
			continue
		}
		if u, err := readProc(p); err == nil {
			prev := out[name]
			out[name] = procUsage{CPUSeconds: prev.CPUSeconds + u.CPUSeconds, PeakRSSMiB: max(prev.PeakRSSMiB, u.PeakRSSMiB)}
		}
	}
	return out
}
