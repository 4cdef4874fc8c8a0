// Package simcluster starts and stops a simulated cluster of its own through hack/cluster.sh
// (real kube-apiserver, etcd, kube-controller-manager and kube-scheduler, kwok nodes), for
// the end-to-end tests and the benchmark.
package simcluster

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

// Cluster is one simulated cluster, its state in Dir.
type Cluster struct {
	// Root is the repository (hack/cluster.sh, bin/).
	Root string
	// Name must be unique on the machine (kwokctl's cluster name); Dir holds its state.
	Name, Dir string
	// Volumes is the number of PersistentVolumes to create (the cluster has no provisioner).
	Volumes int
	// AuditWrites logs every write, and no read, in the API server's audit log (AuditLog).
	AuditWrites bool
	// Output receives the script's output; nil is os.Stderr.
	Output io.Writer
}

// Up starts the cluster (idempotent).
func (k *Cluster) Up() error { return k.run("up") }

// Down stops and deletes it.
func (k *Cluster) Down() error { return k.run("down") }

// Kubeconfig is the path of its admin kubeconfig.
func (k *Cluster) Kubeconfig() string { return filepath.Join(k.Dir, "kubeconfig") }

// AuditLog finds the API server's audit log.
func (k *Cluster) AuditLog() (string, error) {
	m, _ := filepath.Glob(filepath.Join(k.Dir, "kwok", "clusters", k.Name, "logs", "audit.log"))
	if len(m) == 0 {
		m, _ = filepath.Glob(filepath.Join(k.Dir, "kwok", "clusters", k.Name, "*", "audit*.log"))
	}
	if len(m) == 0 {
		return "", fmt.Errorf("no audit log under %s", filepath.Join(k.Dir, "kwok", "clusters", k.Name))
	}
	return m[0], nil
}

func (k *Cluster) run(verb string) error {
	env := append(os.Environ(), "SCORE_CLUSTER_NAME="+k.Name, "SCORE_DEV_DIR="+k.Dir, "SCORE_CLUSTER_VOLUMES="+strconv.Itoa(k.Volumes))
	if k.AuditWrites {
		env = append(env, "SCORE_CLUSTER_AUDIT_POLICY="+filepath.Join(k.Root, "hack", "audit-writes.yaml"))
	}
	out := k.Output
	if out == nil {
		out = os.Stderr
	}
	cmd := exec.Command(filepath.Join(k.Root, "hack", "cluster.sh"), verb)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, out, out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("hack/cluster.sh %s: %w", verb, err)
	}
	return nil
}
