//go:build !unix

package provisionercmd

import "os/exec"

// killProcessGroup kills only the command itself where process groups do not exist.
func killProcessGroup(*exec.Cmd) {}
