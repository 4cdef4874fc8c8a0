package devenv

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// background is a program Up leaves running: started in its own session so that it outlives
// the command, with its output in a log and its pid in a file of the environment's directory.
// The controllers and the gateway controller are two.
type background struct {
	// name is what the progress lines call it.
	name string
	// log and pid are the paths of its log and pid file.
	log, pid string
	// owner is a string its command line holds (the environment's kubeconfig): a pid is
	// reused once its process is gone, so a pid is this program's only while its command line
	// names the owner (a process that exited has an empty one).
	owner string
}

// start runs argv in the background, its log truncated, and records its pid. exited yields
// once the program ends, if it ends while this process runs (a pid alone cannot tell: right
// after exec the new program's command line may still read empty).
func (b background) start(argv []string) (pid int, exited <-chan error, err error) {
	logFile, err := os.OpenFile(b.log, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return 0, nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, nil, fmt.Errorf("starting %s: %w", b.name, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	pid = cmd.Process.Pid
	if err := os.WriteFile(b.pid, []byte(strconv.Itoa(pid)), 0o644); err != nil {
		return 0, nil, err
	}
	return pid, done, nil
}

// stop ends the program start recorded, if it still runs (SIGTERM, then SIGKILL after ten
// seconds), and removes its pid file. It returns the pid it stopped, 0 when none ran.
func (b background) stop() (int, error) {
	raw, err := os.ReadFile(b.pid)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil || !b.running(pid) {
		return 0, os.Remove(b.pid)
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	for i := 0; i < 100 && b.running(pid); i++ {
		time.Sleep(100 * time.Millisecond)
	}
	if b.running(pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return pid, os.Remove(b.pid)
}

// running reports whether pid is this program (see owner).
func (b background) running(pid int) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && strings.Contains(string(cmdline), b.owner)
}
