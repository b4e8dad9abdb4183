package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// composeProject keeps the test's stack apart from a developer's own.
const composeProject = "apichaine2e"

// requireDocker skips loudly when there is no Docker engine: compose tests prove nothing
// without one, and must not pass silently.
func requireDocker(t *testing.T) {
	t.Helper()
	if out, err := exec.Command("docker", "info").CombinedOutput(); err != nil {
		fmt.Printf("\n*** SKIPPED %s: docker info failed, the compose tests need a Docker engine: %v\n%s\n", t.Name(), err, out)
		t.Skip("docker info failed")
	}
}

type stack struct {
	t    *testing.T
	env  []string
	port int
	dir  string
}

func (s *stack) run(timeout time.Duration, name string, args ...string) string {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = repoRoot()
	cmd.Env = append(os.Environ(), s.env...)
	out, err := cmd.CombinedOutput()
	require.NoError(s.t, err, "%s %v:\n%s", name, args, out)
	return string(out)
}

// compose runs compose in deploy/compose the way the Makefile picks it.
func (s *stack) compose(args ...string) string {
	s.t.Helper()
	bin, pre := "docker-compose", []string{}
	if exec.Command("docker", "compose", "version").Run() == nil {
		bin, pre = "docker", []string{"compose"}
	}
	return s.run(5*time.Minute, bin, append(append(pre, "--project-directory", s.dir, "-f", filepath.Join(s.dir, "compose.yaml")), args...)...)
}

func startStack(t *testing.T) (*stack, *kubernetes.Clientset, *rest.Config) {
	requireDocker(t)
	s := &stack{t: t, port: freePort(t), dir: filepath.Join(repoRoot(), "deploy", "compose")}
	s.env = []string{"COMPOSE_PROJECT_NAME=" + composeProject, fmt.Sprintf("APICHAIN_PORT=%d", s.port)}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("compose logs:\n%s", s.compose("logs", "--tail", "40"))
		}
		s.run(5*time.Minute, "make", "down")
		out, _ := exec.Command("docker", "ps", "-q", "--filter", "label=com.docker.compose.project="+composeProject).Output()
		assert.Empty(t, strings.TrimSpace(string(out)), "stack down leaves no containers running")
	})
	s.run(30*time.Minute, "make", "up")
	cfg, err := clientcmd.BuildConfigFromFlags(fmt.Sprintf("https://127.0.0.1:%d", s.port), filepath.Join(s.dir, "admin.kubeconfig"))
	require.NoError(t, err)
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	return s, cs, cfg
}

func (s *stack) kubectl(args ...string) string {
	s.t.Helper()
	return s.run(time.Minute, "kubectl", append([]string{"--kubeconfig", filepath.Join(s.dir, "admin.kubeconfig"),
		"--server", fmt.Sprintf("https://127.0.0.1:%d", s.port)}, args...)...)
}

// The compose stack comes up from nothing, kubectl and client-go use it, core scales to
// three replicas that all get traffic, and it goes away cleanly.
func TestComposeStackScale(t *testing.T) {
	s, cs, cfg := startStack(t)
	out := s.kubectl("get", "--raw", "/readyz?verbose")
	for _, want := range []string{"[+]core ok (1/1 instances ready)", "[+]extensions ok (1/1", "[+]aggregator ok (1/1", "[+]lifecycle ok (from NATS)"} {
		assert.Contains(t, out, want)
	}

	s.kubectl("create", "namespace", "compose")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w, err := cs.CoreV1().ConfigMaps("compose").Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	defer w.Stop()
	s.kubectl("create", "configmap", "c1", "-n", "compose", "--from-literal=a=b")
	select {
	case ev := <-w.ResultChan():
		assert.Equal(t, watch.Added, ev.Type)
		assert.Equal(t, "c1", ev.Object.(*corev1.ConfigMap).Name)
	case <-ctx.Done():
		t.Fatal("no watch event")
	}
	assert.Contains(t, s.kubectl("get", "cm", "-n", "compose"), "c1")

	s.compose("up", "-d", "--no-recreate", "--scale", "core=3")
	hc, err := rest.HTTPClientFor(cfg)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		code, body, _ := doGet(t, hc, cfg.Host+"/readyz?verbose")
		return code == 200 && strings.Contains(body, "[+]core ok (3/3 instances ready)")
	}, 3*time.Minute, time.Second, "readiness should list three ready core instances")

	for i := 0; i < 90; i++ {
		_, err := cs.CoreV1().ConfigMaps("compose").Get(ctx, "c1", metav1.GetOptions{})
		require.NoError(t, err)
	}
	_, metrics, _ := doGet(t, hc, cfg.Host+"/metrics")
	re := regexp.MustCompile(`apichain_gateway_backend_requests_total\{instance="([^"]+)",service="core"\} (\d+)`)
	instances := map[string]bool{}
	for _, m := range re.FindAllStringSubmatch(metrics, -1) {
		if m[2] != "0" {
			instances[m[1]] = true
		}
	}
	assert.Len(t, instances, 3, "requests reach all three core replicas:\n%s", metrics)
}
