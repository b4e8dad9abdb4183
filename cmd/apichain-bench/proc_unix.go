//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

var (
	sigInterrupt = syscall.SIGINT
	sigKill      = syscall.SIGKILL
)

// setProcessGroup puts the command in its own process group, so that signals reach
// its children too (e.g. when the command is a wrapper script) and a terminal's ^C
// reaches only apichain-bench, which then stops the command itself.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func signalGroup(cmd *exec.Cmd, sig syscall.Signal) error {
	return syscall.Kill(-cmd.Process.Pid, sig)
}
