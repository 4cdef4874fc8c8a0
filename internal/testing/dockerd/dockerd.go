// Package dockerd starts a Docker Engine for a test run: Debian's dockerd (hack/tools.sh
// installs it), with its own data root and socket, stopped and removed after. Images come from
// files the tests make (Import), never from a remote registry.
package dockerd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	dockerclient "github.com/docker/docker/client"

	"github.com/score-orchestrator/score-orchestrator/internal/build/debimage"
)

// Engine is a running dockerd.
type Engine struct {
	// Host is its DOCKER_HOST (unix://...), Client a client of it.
	Host   string
	Client *dockerclient.Client
	dir    string
	cmd    *exec.Cmd
	lock   *os.File
}

// ErrNoDocker is a machine without dockerd.
var ErrNoDocker = errors.New("dockerd is not installed (hack/tools.sh docker installs Debian's docker.io, as root)")

// Start starts a dockerd. One runs at a time on a machine (they would share the default
// bridge and its firewall rules): Start waits for the one before to stop.
func Start() (*Engine, error) {
	bin, err := exec.LookPath("dockerd")
	if err != nil {
		return nil, ErrNoDocker
	}
	lock, err := os.OpenFile(filepath.Join(os.TempDir(), "score-dockerd.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		lock.Close()
		return nil, fmt.Errorf("waiting for another dockerd: %w", err)
	}
	// Every test's dockerd runs under the lock; one running now is another's (make
	// dev-docker's), which would share the default bridge and its firewall rules.
	if out, err := exec.Command("pgrep", "-x", "dockerd").Output(); err == nil && len(bytes.TrimSpace(out)) > 0 {
		lock.Close()
		return nil, fmt.Errorf("another dockerd runs on this machine (pid %s; make dev-docker's? make dev-down stops it): stop it first", bytes.TrimSpace(out))
	}
	dir, err := os.MkdirTemp("", "dockerd")
	if err != nil {
		lock.Close()
		return nil, err
	}
	e := &Engine{dir: dir, lock: lock, Host: "unix://" + filepath.Join(dir, "docker.sock")}
	log, err := os.Create(filepath.Join(dir, "dockerd.log"))
	if err != nil {
		e.Stop()
		return nil, err
	}
	e.cmd = exec.Command(bin, "--data-root", filepath.Join(dir, "data"), "--exec-root", filepath.Join(dir, "exec"),
		"--pidfile", filepath.Join(dir, "dockerd.pid"), "-H", e.Host)
	e.cmd.Stdout, e.cmd.Stderr = log, log
	e.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := e.cmd.Start(); err != nil {
		e.Stop()
		return nil, err
	}
	if e.Client, err = dockerclient.NewClientWithOpts(dockerclient.WithHost(e.Host), dockerclient.WithAPIVersionNegotiation()); err != nil {
		e.Stop()
		return nil, err
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := e.Client.Ping(context.Background())
		if err == nil {
			return e, nil
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(filepath.Join(dir, "dockerd.log"))
			e.Stop()
			return nil, fmt.Errorf("dockerd did not answer within a minute: %w\n%s", err, tail(out))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Stop stops dockerd (and what it runs) and removes its directory.
func (e *Engine) Stop() {
	if e.cmd != nil && e.cmd.Process != nil {
		_ = e.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = e.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-e.cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
	_ = exec.Command("umount", "-R", filepath.Join(e.dir, "data")).Run()
	_ = os.RemoveAll(e.dir)
	if e.lock != nil {
		e.lock.Close()
	}
}

// Import makes an image named ref of one static program: a root filesystem with the file
// at /program, its entrypoint.
func (e *Engine) Import(ctx context.Context, ref, program string) error {
	return debimage.ImportProgram(ctx, e.Client, ref, program)
}

func tail(b []byte) []byte {
	if len(b) > 4000 {
		return b[len(b)-4000:]
	}
	return b
}
