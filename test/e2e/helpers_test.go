package e2e

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const sigterm = syscall.SIGTERM

// startAllInOne runs the all-in-one with embedded etcd and NATS and waits for readiness.
func startAllInOne(t testing.TB, extra ...string) (*client, *process) {
	t.Helper()
	data := tempDataDir(t)
	p := start(t, "apichain", append([]string{"--data-dir", data, "--secure-port", "0"}, extra...)...)
	c := waitKubeconfig(t, filepath.Join(data, "admin.kubeconfig"))
	c.waitReady(60 * time.Second)
	return c, p
}

// dataDir recovers the data dir from the kubeconfig location used to build c.
func (c *client) dataDir() string { return c.data }

// signalOrder extracts the order of lifecycle signals one service logged.
func signalOrder(log, service string) []string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, `msg="lifecycle signal"`) || !strings.Contains(line, "service="+service+" ") {
			continue
		}
		if i := strings.Index(line, "signal="); i >= 0 {
			out = append(out, strings.Fields(line[i+len("signal="):])[0])
		}
	}
	return out
}
