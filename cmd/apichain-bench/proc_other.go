//go:build !unix

package main

import (
	"os"
	"os/exec"
)

var (
	sigInterrupt = os.Interrupt
	sigKill      = os.Kill
)

func setProcessGroup(*exec.Cmd) {}

func signalGroup(cmd *exec.Cmd, sig os.Signal) error {
	return cmd.Process.Signal(sig)
}
