package e2e

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
)

// swarmStack names the test's stack apart from a developer's own.
const swarmStack = "apichaine2e"

// The compose images as a Docker swarm stack (deploy/swarm) on a single-node swarm: kubectl
// works through the balancer's published port, core scales to three tasks that all become
// ready, the gateways run as two tasks, and a forced rolling update of the gateways
// (start-first) under load from eight client-go workers fails nothing and loses nothing.
// Skipped loudly where this engine cannot become a swarm; an engine this test made a swarm
// leaves it afterwards.
func TestComposeSwarmStack(t *testing.T) {
	requireDocker(t)
	state, err := exec.Command("docker", "info", "-f", "{{.Swarm.LocalNodeState}}").Output()
	require.NoError(t, err)
	if strings.TrimSpace(string(state)) != "active" {
		if out, err := exec.Command("docker", "swarm", "init").CombinedOutput(); err != nil {
			fmt.Printf("\n*** SKIPPED %s: docker swarm init failed, so the swarm stack cannot be tried here: %v\n%s\n", t.Name(), err, out)
			t.Skip("docker swarm init failed")
		}
		t.Cleanup(func() {
			out, err := exec.Command("docker", "swarm", "leave", "--force").CombinedOutput()
			assert.NoError(t, err, "leave the swarm this test made: %s", out)
		})
	}
	s := &stack{t: t, port: freePort(t), dir: filepath.Join(repoRoot(), "deploy", "swarm")}
	s.env = []string{"APICHAIN_STACK=" + swarmStack, fmt.Sprintf("APICHAIN_SWARM_PORT=%d", s.port)}
	t.Cleanup(func() {
		if t.Failed() {
			for _, svc := range []string{"gateway", "core", "balancer"} {
				out, _ := exec.Command("docker", "service", "logs", "--tail", "40", swarmStack+"_"+svc).CombinedOutput()
				t.Logf("%s logs:\n%s", svc, out)
			}
		}
		s.run(5*time.Minute, "make", "swarm-down")
		out, _ := exec.Command("docker", "ps", "-aq", "--filter", "label=com.docker.stack.namespace="+swarmStack).Output()
		assert.Empty(t, strings.TrimSpace(string(out)), "the stack's removal leaves no containers")
	})
	s.run(30*time.Minute, "make", "swarm-up")

	cs, cfg := s.clients()
	hc, err := rest.HTTPClientFor(cfg)
	require.NoError(t, err)

	readyz := s.kubectl("get", "--raw", "/readyz?verbose")
	assert.Contains(t, readyz, "[+]lifecycle ok (from NATS)")
	s.kubectl("create", "namespace", "swarm")
	s.kubectl("create", "configmap", "c1", "-n", "swarm", "--from-literal=a=b")
	assert.Contains(t, s.kubectl("get", "configmaps", "-n", "swarm"), "c1")

	s.run(5*time.Minute, "docker", "service", "scale", "--detach=false", swarmStack+"_core=3")
	s.waitReadyInstances(hc, cfg, "core", 3)
	assert.Equal(t, "2/2", strings.TrimSpace(s.run(time.Minute, "docker", "service", "ls", "--filter", "name="+swarmStack+"_gateway",
		"--format", "{{.Replicas}}")), "two gateway tasks")

	load := startLoadOf(t, configMaps(cs, "swarm"), "swarm", 8)
	load.waitAcked(t, 100)
	tasks := func() []string {
		return strings.Fields(s.run(time.Minute, "docker", "service", "ps", "-q", "--filter", "desired-state=running", swarmStack+"_gateway"))
	}
	before := tasks()
	s.run(10*time.Minute, "docker", "service", "update", "--force", "--detach=false", swarmStack+"_gateway")
	after := tasks()
	assert.Len(t, after, 2)
	for _, id := range after {
		assert.NotContains(t, before, id, "every gateway task was replaced")
	}
	load.waitAcked(t, load.ackedCount()+100)
	attempts, failed := load.stopAndCheck(t, false)
	t.Logf("a forced rolling update of 2 gateway tasks on swarm: %d creates attempted, %d failed, 0 lost", attempts, failed)
}
