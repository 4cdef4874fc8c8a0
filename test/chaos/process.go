package chaos

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// controller is one score-controllers process, supervised as a Deployment would be: when it
// exits — killed, or on its own — it is started again after a delay.
type controller struct {
	name string
	argv []string
	log  string

	mu       sync.Mutex
	cmd      *exec.Cmd
	stopping bool
	kills    int // SIGKILLs sent
	exits    int // exits that were not kills
	killed   bool
	done     chan struct{}
}

func newController(name string, argv []string, log string) *controller {
	return &controller{name: name, argv: argv, log: log, done: make(chan struct{})}
}

// supervise starts the process and keeps it running until stop.
func (c *controller) supervise(progress func(string, ...any)) {
	defer close(c.done)
	for {
		cmd, err := c.start()
		if err != nil {
			progress("%s: starting: %v", c.name, err)
			time.Sleep(time.Second)
			continue
		}
		_ = cmd.Wait()
		c.mu.Lock()
		stopping, killed := c.stopping, c.killed
		c.killed = false
		if !stopping && !killed {
			c.exits++
		}
		c.mu.Unlock()
		if stopping {
			return
		}
		delay := time.Second // a crash-looping process is not restarted at once
		if killed {
			delay = time.Duration(200+rand.IntN(1800)) * time.Millisecond
		} else {
			progress("%s exited on its own (%s); restarting", c.name, cmd.ProcessState)
		}
		time.Sleep(delay)
	}
}

func (c *controller) start() (*exec.Cmd, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopping {
		return nil, errors.New("stopping")
	}
	out, err := os.OpenFile(c.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	cmd := exec.Command(c.argv[0], c.argv[1:]...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c.cmd = cmd
	return cmd, nil
}

// kill sends SIGKILL to the running process, as kill -9 does.
func (c *controller) kill() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd == nil || c.cmd.Process == nil || c.cmd.ProcessState != nil || c.killed {
		return false
	}
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return false
	}
	c.killed = true
	c.kills++
	return true
}

// stop ends the process for good and waits for the supervisor.
func (c *controller) stop() {
	c.mu.Lock()
	c.stopping = true
	if c.cmd != nil && c.cmd.Process != nil {
		_ = c.cmd.Process.Signal(syscall.SIGKILL)
	}
	c.mu.Unlock()
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
	}
}

func (c *controller) counts() (kills, exits int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.kills, c.exits
}

// component is a process of the simulated cluster that kwokctl (runtime binary) started:
// its pid file, command line, working directory and log are all it takes to restart it.
type component struct {
	name    string
	pidFile string
}

func clusterComponent(kwokDir, cluster, name string) component {
	return component{name: name, pidFile: filepath.Join(kwokDir, "clusters", cluster, "pids", name+".pid")}
}

// restart kills the component with SIGKILL, waits until it is gone, waits down, and starts
// it again with the same command line, directory and log, recording the new pid where
// kwokctl looks for it (so that deleting the cluster stops the new process).
func (p component) restart(down time.Duration) (*exec.Cmd, error) {
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
		return nil, fmt.Errorf("%s (pid %d) is not running: %w", p.name, pid, err)
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
		return nil, fmt.Errorf("killing %s: %w", p.name, err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s (pid %d) survived SIGKILL", p.name, pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(down)
	out, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s again: %w", p.name, err)
	}
	go func() { _ = cmd.Wait() }() // reaped when kwokctl stops it
	if err := os.WriteFile(p.pidFile, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
		return cmd, err
	}
	return cmd, nil
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
