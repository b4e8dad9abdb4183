package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
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
	t     *testing.T
	env   []string
	port  int
	dir   string
	files []string // compose files beyond compose.yaml
	// The ports Prometheus and Jaeger publish on localhost.
	prometheusPort, jaegerPort int
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
	pre = append(pre, "--project-directory", s.dir, "-f", filepath.Join(s.dir, "compose.yaml"))
	for _, f := range s.files {
		pre = append(pre, "-f", filepath.Join(s.dir, f))
	}
	return s.run(5*time.Minute, bin, append(pre, args...)...)
}

// startStack brings the stack up with make up, from compose.yaml and the given compose files
// over it, with env added to the environment.
func startStack(t *testing.T, files []string, env ...string) (*stack, *kubernetes.Clientset, *rest.Config) {
	requireDocker(t)
	s := &stack{t: t, port: freePort(t), dir: filepath.Join(repoRoot(), "deploy", "compose"), files: files,
		prometheusPort: freePort(t), jaegerPort: freePort(t)}
	s.env = append([]string{"COMPOSE_PROJECT_NAME=" + composeProject, fmt.Sprintf("APICHAIN_PORT=%d", s.port),
		fmt.Sprintf("APICHAIN_PROMETHEUS_PORT=%d", s.prometheusPort), fmt.Sprintf("APICHAIN_JAEGER_PORT=%d", s.jaegerPort),
		"COMPOSE_FILE=" + strings.Join(append([]string{"compose.yaml"}, files...), ":")}, env...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("compose logs:\n%s", s.compose("logs", "--tail", "40"))
		}
		s.run(5*time.Minute, "make", "down")
		out, _ := exec.Command("docker", "ps", "-q", "--filter", "label=com.docker.compose.project="+composeProject).Output()
		assert.Empty(t, strings.TrimSpace(string(out)), "stack down leaves no containers running")
	})
	s.run(30*time.Minute, "make", "up")
	cs, cfg := s.clients()
	return s, cs, cfg
}

// clients are client-go's, with the admin kubeconfig the stack wrote in its directory, on
// the published port.
func (s *stack) clients() (*kubernetes.Clientset, *rest.Config) {
	cfg, err := clientcmd.BuildConfigFromFlags(fmt.Sprintf("https://127.0.0.1:%d", s.port), filepath.Join(s.dir, "admin.kubeconfig"))
	require.NoError(s.t, err)
	cfg.QPS, cfg.Burst = -1, 0 // the load generator must not be throttled on the client
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(s.t, err)
	return cs, cfg
}

func (s *stack) kubectl(args ...string) string {
	s.t.Helper()
	return s.run(time.Minute, "kubectl", append([]string{"--kubeconfig", filepath.Join(s.dir, "admin.kubeconfig"),
		"--server", fmt.Sprintf("https://127.0.0.1:%d", s.port)}, args...)...)
}

// The compose stack comes up from nothing, kubectl and client-go use it, core scales to
// three replicas that all get traffic, survives a rolling restart and a SIGKILL under load
// without losing acknowledged writes, keeps serving without NATS, and goes away cleanly.
func TestComposeStack(t *testing.T) {
	s, cs, cfg := startStack(t, nil, "APICHAIN_TRACING=every-request")
	out := s.kubectl("get", "--raw", "/readyz?verbose")
	for _, want := range []string{"[+]core ok (1/1 instances ready)", "[+]extensions ok (1/1", "[+]aggregator ok (1/1", "[+]lifecycle ok (from NATS)"} {
		assert.Contains(t, out, want)
	}
	s.checkNothingOpen(t, cfg)

	s.kubectl("create", "namespace", "compose")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w, err := cs.CoreV1().ConfigMaps("compose").Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=c1"}) // not the namespace's kube-root-ca.crt
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

	t.Run("Prometheus Jaeger and the alerts", func(t *testing.T) { s.checkObservability(t, cs) })

	// Secrets are encrypted at rest by default: etcd's own etcdctl, in the etcd image, reads
	// kube's secretbox prefix and no plaintext.
	t.Run("Secrets encrypted at rest", func(t *testing.T) {
		s.kubectl("create", "secret", "generic", "at-rest", "-n", "compose", "--from-literal=password=plain-compose-secret")
		raw := s.compose("exec", "-T", "etcd", "/app", "etcdctl", "get", "/registry/secrets/compose/at-rest", "--print-value-only")
		assert.Contains(t, raw, "k8s:enc:secretbox:v1:key1:", "etcd holds the Secret encrypted")
		assert.NotContains(t, raw, "plain-compose-secret")
		assert.Contains(t, s.kubectl("get", "secret", "at-rest", "-n", "compose", "-o", "jsonpath={.data.password}"),
			base64.StdEncoding.EncodeToString([]byte("plain-compose-secret")))
	})

	t.Run("rolling restart under load", func(t *testing.T) {
		load := startLoad(t, configMaps(cs, "compose"), "roll")
		for _, id := range s.containers("core") {
			s.run(2*time.Minute, "docker", "stop", "-t", "30", id) // SIGTERM, then the graceful drain
			s.run(time.Minute, "docker", "start", id)
			s.waitReadyInstances(hc, cfg, "core", 3)
		}
		load.stopAndCheck(t, false)
	})

	t.Run("SIGKILL of a core replica under load", func(t *testing.T) {
		load := startLoad(t, configMaps(cs, "compose"), "kill")
		victim := s.containers("core")[0]
		s.run(time.Minute, "docker", "kill", "--signal", "KILL", victim)
		killed := time.Now()
		s.waitReadyInstances(hc, cfg, "core", 2)
		t.Logf("the gateway stopped routing to the killed replica after %s", time.Since(killed).Round(100*time.Millisecond))
		assert.Less(t, time.Since(killed), 15*time.Second)
		load.stopAndCheck(t, true)
		s.run(time.Minute, "docker", "start", victim)
		s.waitReadyInstances(hc, cfg, "core", 3)
	})

	// NATS is a three-node JetStream cluster keeping the lifecycle bucket and the audit stream
	// on every node. A node stopped (lame duck: it hands its leaderships, then its clients, to
	// the other two) and started again costs nothing: no request fails, and every gateway's
	// readiness keeps coming from NATS, never from the gRPC fallback.
	t.Run("each NATS node stopped in turn under load", func(t *testing.T) {
		load := startLoad(t, configMaps(cs, "compose"), "natsnode")
		polls := pollReadyz(hc, cfg.Host)
		for _, node := range natsNodes {
			id := s.containers(node)[0]
			stopped := time.Now()
			s.run(2*time.Minute, "docker", "stop", id)
			t.Logf("%s stopped in lame duck mode in %s", node, time.Since(stopped).Round(100*time.Millisecond))
			load.waitAcked(t, load.ackedCount()+100)
			s.run(time.Minute, "docker", "start", id)
			s.waitHealthy(id)
			load.waitAcked(t, load.ackedCount()+100)
		}
		n, bad := polls.stop()
		attempts, failed := load.stopAndCheck(t, false)
		assert.Empty(t, bad, "every /readyz of the %d polled was 200 with readiness from NATS", n)
		t.Logf("each of 3 NATS nodes stopped and started in turn: %d creates attempted, %d failed, 0 lost; "+
			"%d /readyz polled, %d not from NATS", attempts, failed, n, len(bad))
	})

	// Losing all of NATS and getting it back changes the gateway's routing set twice (instance
	// states expire, then the gRPC-health fallback's static addresses take over, then NATS's
	// states again): connections leave the pool only after their requests, so none fails.
	t.Run("NATS stopped and back under load, three times", func(t *testing.T) {
		load := startLoad(t, configMaps(cs, "compose"), "nats")
		var nats []string
		for _, node := range natsNodes {
			nats = append(nats, s.containers(node)[0])
		}
		for range 3 {
			s.run(2*time.Minute, "docker", append([]string{"stop"}, nats...)...)
			require.Eventually(t, func() bool {
				code, body, _ := doGet(t, hc, cfg.Host+"/readyz?verbose")
				return code == 200 && strings.Contains(body, "NATS unreachable: readiness from grpc.health.v1 fallback")
			}, 2*time.Minute, 250*time.Millisecond, "readiness falls back to gRPC health and says so")
			load.waitAcked(t, load.ackedCount()+100)
			s.run(time.Minute, "docker", append([]string{"start"}, nats...)...)
			require.Eventually(t, func() bool {
				code, body, _ := doGet(t, hc, cfg.Host+"/readyz?verbose")
				return code == 200 && strings.Contains(body, "[+]lifecycle ok (from NATS)") && strings.Contains(body, "[+]core ok (3/3")
			}, 2*time.Minute, 250*time.Millisecond, "readiness over NATS resumes")
			load.waitAcked(t, load.ackedCount()+100)
		}
		attempts, failed := load.stopAndCheck(t, false)
		t.Logf("all of NATS stopped and started 3 times: %d creates attempted, %d failed, 0 lost", attempts, failed)
	})

	t.Run("custom resources through a rolling restart of two extensions replicas", func(t *testing.T) {
		s.compose("up", "-d", "--no-recreate", "--scale", "core=3", "--scale", "extensions=2")
		s.waitReadyInstances(hc, cfg, "extensions", 2)
		crd := filepath.Join(t.TempDir(), "crd.yaml")
		writeFile(t, crd, widgetCRD)
		s.kubectl("create", "-f", crd)
		waitEstablished(t, filepath.Join(s.dir, "admin.kubeconfig"), "widgets.example.com", "--server", fmt.Sprintf("https://127.0.0.1:%d", s.port))
		widgets := dynamic.NewForConfigOrDie(cfg).Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}).Namespace("compose")
		target := dynamicTarget(widgets, "example.com/v1", "Widget", map[string]any{"size": int64(1)})
		// Every replica serves the new resource before the load starts.
		require.Eventually(t, func() bool { return target.create(context.Background(), "first") == nil }, time.Minute, 100*time.Millisecond)
		load := startLoad(t, target, "cr")
		for _, id := range s.containers("extensions") {
			s.run(2*time.Minute, "docker", "stop", "-t", "30", id)
			s.run(time.Minute, "docker", "start", id)
			s.waitReadyInstances(hc, cfg, "extensions", 2)
		}
		attempts, failed := load.stopAndCheck(t, false)
		t.Logf("a rolling restart of two extensions replicas: %d widget creates attempted, %d failed, 0 lost", attempts, failed)
	})

	t.Run("the real sample-apiserver behind two aggregator replicas", func(t *testing.T) {
		scale := []string{"--scale", "core=3", "--scale", "extensions=2", "--scale", "aggregator=2"}
		s.compose(append([]string{"up", "-d", "--no-recreate"}, scale...)...)
		s.waitReadyInstances(hc, cfg, "aggregator", 2)
		// Installed as its README says, run from a scratch image of a static build, reached
		// through Docker's DNS under its Service's cluster name.
		admin := s.kubeconfigFor(t, cfg.Host) // the stack's, at its port
		wardle := t.TempDir()
		caBundle := installSample(t, wardle, "https://gateway:6443", cfg.CAData, admin)
		require.NoError(t, os.Chmod(wardle, 0o755))
		s.run(time.Minute, "cp", binary("sample-apiserver"), filepath.Join(s.dir, "bin", "sample-apiserver"))
		s.env = append(s.env, "WARDLE_DIR="+wardle)
		s.files = []string{"compose.wardle.yaml"}
		s.compose("build", "wardle")
		s.compose(append(append([]string{"up", "-d", "--no-recreate"}, scale...), "wardle")...)
		registration := filepath.Join(wardle, "registration.yaml")
		writeFile(t, registration, "apiVersion: v1\nkind: Service\nmetadata: {name: api, namespace: wardle}\nspec: {ports: [{name: https, port: 443}]}\n"+
			(&sampleServer{caBundle: caBundle}).apiServices(443))
		s.kubectl("apply", "-f", registration)
		require.Eventually(t, func() bool {
			out, err := kubectl(t, admin, "get", "apiservice", "v1alpha1.wardle.example.com", "-o",
				`jsonpath={.status.conditions[?(@.type=="Available")].status}`)
			return err == nil && out == "True"
		}, 3*time.Minute, time.Second, "the APIService becomes available")
		flunder := filepath.Join(wardle, "flunder.yaml")
		writeFile(t, flunder, "apiVersion: wardle.example.com/v1alpha1\nkind: Flunder\nmetadata: {name: f1, namespace: compose}\n")
		eventuallyKubectl(t, admin, "flunder.wardle.example.com/f1 created", "create", "-f", flunder)

		// A rolling restart of the two replicas under load on the resource they proxy: each
		// serves it alone while the other restarts, and no request fails.
		quiet := rest.CopyConfig(cfg)
		quiet.WarningHandler = rest.NoWarnings{} // each create would log that v1alpha1 is deprecated
		flunders := dynamic.NewForConfigOrDie(quiet).Resource(schema.GroupVersionResource{Group: "wardle.example.com", Version: "v1alpha1", Resource: "flunders"}).Namespace("compose")
		load := startLoad(t, dynamicTarget(flunders, "wardle.example.com/v1alpha1", "Flunder", nil), "flunder")
		for _, id := range s.containers("aggregator") {
			load.waitAcked(t, load.ackedCount()+50)
			s.run(2*time.Minute, "docker", "stop", "-t", "30", id)
			s.waitReadyInstances(hc, cfg, "aggregator", 1)
			load.waitAcked(t, load.ackedCount()+50)
			assert.Contains(t, s.kubectl("get", "flunders", "-n", "compose", "-o", "name"), "flunder.wardle.example.com/f1")
			s.run(time.Minute, "docker", "start", id)
			s.waitReadyInstances(hc, cfg, "aggregator", 2)
		}
		attempts, failed := load.stopAndCheck(t, false)
		t.Logf("a rolling restart of two aggregator replicas: %d flunder creates attempted, %d failed, 0 lost", attempts, failed)
	})

	t.Run("diagnose with core scaled to 2 and one replica stopped", func(t *testing.T) { s.checkDiagnose(t, hc, cfg) })

	// Last: it stops every backend and replaces etcd's data.
	t.Run("etcd snapshot under load, volume destroyed, restored", func(t *testing.T) { s.checkBackupRestore(t, cs, hc, cfg) })
}

// containers lists the running containers of a compose service.
func (s *stack) containers(service string) []string {
	s.t.Helper()
	out := s.run(time.Minute, "docker", "ps", "-q", "--filter", "label=com.docker.compose.project="+composeProject,
		"--filter", "label=com.docker.compose.service="+service)
	ids := strings.Fields(out)
	require.NotEmpty(s.t, ids, "no %s containers", service)
	return ids
}

// natsNodes are compose's NATS cluster's services.
var natsNodes = []string{"nats", "nats1", "nats2"}

// readyzPoller polls /readyz?verbose until stopped and keeps the answers not 200 with
// readiness from NATS.
type readyzPoller struct {
	stopc chan struct{}
	done  chan struct{}
	n     int
	bad   []string
}

func pollReadyz(hc *http.Client, host string) *readyzPoller {
	p := &readyzPoller{stopc: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for {
			select {
			case <-p.stopc:
				return
			case <-time.After(100 * time.Millisecond):
			}
			resp, err := hc.Get(host + "/readyz?verbose")
			p.n++
			if err != nil {
				p.bad = append(p.bad, err.Error())
				continue
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "[+]lifecycle ok (from NATS)") {
				p.bad = append(p.bad, fmt.Sprintf("%d %s", resp.StatusCode, body))
			}
		}
	}()
	return p
}

// stop ends the polling and says how many polls there were and which were bad.
func (p *readyzPoller) stop() (int, []string) {
	close(p.stopc)
	<-p.done
	return p.n, p.bad
}

func (s *stack) waitReadyInstances(hc *http.Client, cfg *rest.Config, service string, n int) {
	s.t.Helper()
	want := fmt.Sprintf("[+]%s ok (%d/%d instances ready)", service, n, n)
	require.Eventually(s.t, func() bool {
		code, body, _ := doGet(s.t, hc, cfg.Host+"/readyz?verbose")
		return code == 200 && strings.Contains(body, want)
	}, 3*time.Minute, 250*time.Millisecond, "waiting for %q", want)
}

// loadTarget is what a load creates and reads: ConfigMaps, or custom resources.
type loadTarget struct {
	create func(ctx context.Context, name string) error
	get    func(ctx context.Context, name string) error
	names  func(ctx context.Context) ([]string, error)
	// list reads a page of them; nil if the load does not list.
	list func(ctx context.Context) error
}

func configMaps(cs *kubernetes.Clientset, ns string) loadTarget {
	cms := cs.CoreV1().ConfigMaps(ns)
	return loadTarget{
		create: func(ctx context.Context, name string) error {
			_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
			return err
		},
		get: func(ctx context.Context, name string) error {
			_, err := cms.Get(ctx, name, metav1.GetOptions{})
			return err
		},
		names: func(ctx context.Context) ([]string, error) {
			list, err := cms.List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			var out []string
			for _, cm := range list.Items {
				out = append(out, cm.Name)
			}
			return out, nil
		},
		list: func(ctx context.Context) error {
			_, err := cms.List(ctx, metav1.ListOptions{Limit: 50})
			return err
		},
	}
}

// dynamicTarget creates and reads objects of a kind through the dynamic client (spec: their
// spec, if any).
func dynamicTarget(c dynamic.ResourceInterface, apiVersion, kind string, spec map[string]any) loadTarget {
	return loadTarget{
		create: func(ctx context.Context, name string) error {
			obj := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": name}}
			if spec != nil {
				obj["spec"] = spec
			}
			_, err := c.Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
			return err
		},
		get: func(ctx context.Context, name string) error {
			_, err := c.Get(ctx, name, metav1.GetOptions{})
			return err
		},
		names: func(ctx context.Context) ([]string, error) {
			list, err := c.List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			var out []string
			for _, o := range list.Items {
				out = append(out, o.GetName())
			}
			return out, nil
		},
	}
}

// load creates and reads objects from several workers until stopped, recording every
// create the server acknowledged and every failure a kube client would see (client-go
// already retries 429 and 503 with Retry-After).
type load struct {
	target  loadTarget
	stop    chan struct{}
	done    sync.WaitGroup
	mu      sync.Mutex
	acked   []string
	failed  []error
	started time.Time
}

func startLoad(t *testing.T, target loadTarget, prefix string) *load {
	return startLoadOf(t, target, prefix, 6)
}

// startLoadOf starts a load from the given number of workers; each also lists a page every
// tenth round when the target lists.
func startLoadOf(t *testing.T, target loadTarget, prefix string, workers int) *load {
	l := &load{target: target, stop: make(chan struct{}), started: time.Now()}
	for w := 0; w < workers; w++ {
		l.done.Add(1)
		go func() {
			defer l.done.Done()
			for i := 0; ; i++ {
				select {
				case <-l.stop:
					return
				default:
				}
				name := fmt.Sprintf("%s-%d-%d", prefix, w, i)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				err := target.create(ctx, name)
				if err == nil {
					err = target.get(ctx, name)
				}
				if err == nil && target.list != nil && i%10 == 9 {
					err = target.list(ctx)
				}
				cancel()
				l.mu.Lock()
				if err == nil {
					l.acked = append(l.acked, name)
				} else {
					l.failed = append(l.failed, fmt.Errorf("%s: %w", name, err))
				}
				l.mu.Unlock()
			}
		}()
	}
	return l
}

func (l *load) ackedCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked)
}

// waitAcked waits until n creates were acknowledged.
func (l *load) waitAcked(t *testing.T, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return l.ackedCount() >= n }, 2*time.Minute, 50*time.Millisecond,
		"%d creates acknowledged", n)
}

// ackedNames are the creates acknowledged so far.
func (l *load) ackedNames() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.acked...)
}

// halt ends the load and waits for its workers.
func (l *load) halt() {
	close(l.stop)
	l.done.Wait()
}

// stopAndCheck ends the load; every acknowledged create must exist. tolerateFailures allows
// requests that failed (a killed replica may take in-flight requests with it) but never a
// lost acknowledged write. It returns how many creates were attempted and how many failed.
func (l *load) stopAndCheck(t *testing.T, tolerateFailures bool) (attempts, failed int) {
	l.halt()
	t.Logf("load: %d acknowledged creates, %d failed requests in %s", len(l.acked), len(l.failed), time.Since(l.started).Round(time.Second))
	for i, err := range l.failed {
		if i == 5 {
			break
		}
		t.Logf("failed: %v", err)
	}
	require.NotEmpty(t, l.acked)
	if !tolerateFailures {
		assert.Empty(t, l.failed, "no failed requests during a rolling restart")
	}
	names, err := l.target.names(context.Background())
	require.NoError(t, err)
	present := map[string]bool{}
	for _, n := range names {
		present[n] = true
	}
	for _, name := range l.acked {
		assert.True(t, present[name], "acknowledged create %s lost", name)
	}
	return len(l.acked) + len(l.failed), len(l.failed)
}
