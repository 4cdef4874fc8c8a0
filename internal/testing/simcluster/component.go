package simcluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Component is a process of the cluster that kwokctl (runtime binary) started
// (kube-apiserver, etcd, ...): its pid file, command line, working directory and log are all
// it takes to start it again.
type Component struct {
	Name    string
	pidFile string
}

// Component names one of the cluster's processes.
func (k *Cluster) Component(name string) Component {
	return Component{Name: name, pidFile: filepath.Join(k.Dir, "kwok", "clusters", k.Name, "pids", name+".pid")}
}

// Restart kills the component with SIGKILL, waits until it is gone, waits down, and starts it
// again (Kill, then the start it returns).
func (p Component) Restart(down time.Duration) (*exec.Cmd, error) {
	start, err := p.Kill()
	if err != nil {
		return nil, err
	}
	time.Sleep(down)
	return start()
}

// Kill kills the component with SIGKILL and waits until it is gone. start runs it again with
// the same command line, directory and log, recording the new pid where kwokctl looks for it
// (so that deleting the cluster stops the new process).
func (p Component) Kill() (start func() (*exec.Cmd, error), err error) {
	raw, err := os.ReadFile(p.pidFile)
	if err != nil {
		return nil, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.pidFile, err)
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return nil, fmt.Errorf("%s (pid %d) is not running: %w", p.Name, pid, err)
	}
	argv := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	dir, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	if err != nil {
		return nil, err
	}
	logPath, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/2", pid))
	if err != nil {
		return nil, err
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return nil, fmt.Errorf("killing %s: %w", p.Name, err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s (pid %d) survived SIGKILL", p.Name, pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return func() (*exec.Cmd, error) {
		out, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, err
		}
		defer out.Close()
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir, cmd.Stdout, cmd.Stderr = dir, out, out
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("starting %s again: %w", p.Name, err)
		}
		go func() { _ = cmd.Wait() }() // reaped when kwokctl stops it
		return cmd, os.WriteFile(p.pidFile, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
	}, nil
}

// alive reports whether pid runs: a zombie (killed, not yet reaped) does not.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses, which may contain spaces.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
