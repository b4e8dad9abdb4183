// Package e2e runs apichain's binaries for real: the all-in-one and the four services as
// separate processes, against real etcd and NATS, driven by kubectl and client-go's HTTP stack.
package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
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

// headCommit is the work tree's git commit, "" outside a git checkout.
func headCommit() string {
	out, err := exec.Command("git", "-C", repoRoot(), "rev-parse", "HEAD").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// buildBinaries builds every main in one go build, so they share compiled packages. In a git
// checkout they record the commit (go.work builds stamp none unless asked), for /version.
func buildBinaries(dir string) error {
	args := []string{"build", "-o", dir + string(os.PathSeparator)}
	if headCommit() != "" {
		args = append(args, "-buildvcs=true")
	}
	cmd := exec.Command("go", append(args,
		"./cmd/apichain", "./services/gateway", "./services/core", "./services/extensions", "./services/aggregator",
		"./pkg/client/example")...)
	cmd.Dir = repoRoot()
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}

func binary(name string) string { return filepath.Join(bin, name) }
