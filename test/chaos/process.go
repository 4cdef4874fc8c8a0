package chaos

import (
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
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
