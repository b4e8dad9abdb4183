// Package e2e runs apichain's binaries for real: the all-in-one and the four services as
// separate processes, against real etcd and NATS, driven by kubectl and client-go's HTTP stack.
package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// bin holds the binaries built once for the whole package.
var bin string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "apichain-e2e-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if err := buildBinaries(dir); err != nil {
		fmt.Fprintln(os.Stderr, "building binaries:", err)
		return 1
	}
	bin = dir
	return m.Run()
}

// repoRoot is the workspace root (this file lives in test/e2e).
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// buildBinaries builds every main in one go build, so they share compiled packages.
func buildBinaries(dir string) error {
	cmd := exec.Command("go", "build", "-o", dir+string(os.PathSeparator),
		"./cmd/apichain", "./services/gateway", "./services/core", "./services/extensions", "./services/aggregator")
	cmd.Dir = repoRoot()
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}

func binary(name string) string { return filepath.Join(bin, name) }
