//go:build unix

package provisionercmd

import (
	"os/exec"
	"syscall"
)

// killProcessGroup runs the command in its own process group and makes cancellation kill the
// whole group, so a shell's children do not outlive a timed-out run.
func killProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
