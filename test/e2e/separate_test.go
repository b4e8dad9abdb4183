package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apichain/apichain/pkg/certs"
	"github.com/apichain/apichain/pkg/embedded"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// cluster is the services as separate processes around one real etcd and one real NATS.
type cluster struct {
	t        *testing.T
	data     string
	pki      *certs.PKI
	etcd     string
	nats     *embedded.NATS
	ports    map[string]int
	backends map[string]*process
	gateway  *process
	client   *client
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	c := &cluster{t: t, data: tempDataDir(t), ports: map[string]int{}, backends: map[string]*process{}}
	etcd, err := embedded.StartEtcd(context.Background(), t.TempDir(), freePort(t), freePort(t))
	require.NoError(t, err)
	t.Cleanup(etcd.Stop)
	c.etcd = etcd.Endpoints()[0]
	c.nats, err = embedded.StartNATS(t.TempDir(), "127.0.0.1", 0)
	require.NoError(t, err)
	t.Cleanup(func() { c.nats.Stop() })
	c.pki, err = certs.EnsurePKI(c.data, nil, []string{"apichain-backend"})
	require.NoError(t, err)

	for _, svc := range []string{"aggregator", "core", "extensions"} {
		c.ports[svc] = freePort(t)
		c.startBackend(svc)
	}
	c.gateway = start(t, "gateway", "--data-dir", c.data, "--secure-port", "0", "--bind-address", "127.0.0.1",
		"--nats-url", c.nats.URL(), "--lifecycle-ttl", "3s",
		"--aggregator-address", c.addr("aggregator"), "--core-address", c.addr("core"), "--extensions-address", c.addr("extensions"))
	c.client = waitKubeconfig(t, filepath.Join(c.data, "admin.kubeconfig"))
	c.client.waitReady(60 * time.Second)
	return c
}

func (c *cluster) addr(svc string) string { return "127.0.0.1:" + strconv.Itoa(c.ports[svc]) }

func (c *cluster) startBackend(svc string) {
	c.backends[svc] = start(c.t, svc, "--bind-address", c.addr(svc), "--instance-id", svc+"-0",
		"--tls-cert-file", c.pki.BackendCertFile, "--tls-private-key-file", c.pki.BackendKeyFile,
		"--client-ca-file", c.pki.CAFile, "--etcd-servers", c.etcd, "--nats-url", c.nats.URL(), "--lifecycle-ttl", "3s")
}

// Backends as separate processes: SIGKILL makes an instance's readiness disappear within a
// few seconds, a restart brings it back, and stopping NATS leaves the API serving with
// readiness from gRPC health instead.
func TestSeparateProcessesKillRestartAndNATSLoss(t *testing.T) {
	c := startCluster(t)
	body := c.client.eventuallyBody("/readyz?verbose", http.StatusOK, 10*time.Second,
		"[+]core ok (1/1 instances ready)", "[+]core/poststarthook/storage-readiness ok", "[+]lifecycle ok (from NATS)")
	assert.Contains(t, body, "[+]extensions ok (1/1 instances ready)")

	c.backends["core"].signal(syscall.SIGKILL)
	killed := time.Now()
	c.client.eventuallyBody("/readyz?verbose", http.StatusInternalServerError, 10*time.Second, "[-]core failed", "readyz check failed")
	t.Logf("core's readiness disappeared %s after SIGKILL", time.Since(killed).Round(time.Millisecond))
	code, _, _ := c.client.get("/api/v1")
	assert.Equal(t, http.StatusServiceUnavailable, code, "core's group is unroutable, and the chain is incomplete without core")

	c.startBackend("core")
	c.client.eventuallyBody("/readyz?verbose", http.StatusOK, 30*time.Second, "[+]core ok (1/1 instances ready)")
	code, body, _ = c.client.get("/api/v1")
	assert.Equal(t, http.StatusOK, code, body)

	c.nats.Stop()
	c.client.eventuallyBody("/readyz?verbose", http.StatusOK, 15*time.Second,
		"[+]lifecycle ok (NATS unreachable: readiness from grpc.health.v1 fallback)", "[+]core ok (1/1 instances ready)")
	// Past the lifecycle TTL the state comes from gRPC alone, and the API keeps serving.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		code, body, _ = c.client.get("/apis/apps/v1")
		require.Equal(t, http.StatusOK, code, body)
		code, body, _ = c.client.get("/readyz")
		require.Equal(t, http.StatusOK, code, body)
	}
	for _, p := range append([]*process{c.gateway}, c.backends["aggregator"], c.backends["core"], c.backends["extensions"]) {
		p.signal(syscall.SIGTERM)
	}
	for name, p := range map[string]*process{"gateway": c.gateway, "core": c.backends["core"]} {
		assert.Equal(t, 0, p.wait(30*time.Second), fmt.Sprintf("%s exits cleanly", name))
	}
	assert.False(t, strings.Contains(c.gateway.output(), "panic"), "no panics")
}

// An informer survives its watch ending: core restarts (gracefully, so its watches end and
// its cache goes away), the informer re-lists and re-watches, and sees what happened meanwhile.
func TestInformerSurvivesWatchRestart(t *testing.T) {
	c := startCluster(t)
	cs := clientset(t, c.client)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	createNamespace(t, cs, "survive")
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace("survive"))
	inf := factory.Core().V1().ConfigMaps().Informer()
	factory.Start(ctx.Done())
	require.True(t, cache.WaitForCacheSync(ctx.Done(), inf.HasSynced))
	cms := cs.CoreV1().ConfigMaps("survive")
	_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { _, ok, _ := inf.GetStore().GetByKey("survive/before"); return ok }, 15*time.Second, 20*time.Millisecond)

	core := c.backends["core"]
	core.signal(syscall.SIGTERM)
	require.Equal(t, 0, core.wait(30*time.Second))
	c.startBackend("core")
	c.client.eventuallyBody("/readyz?verbose", http.StatusOK, 30*time.Second, "[+]core ok (1/1 instances ready)")

	_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, cms.Delete(ctx, "before", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		_, after, _ := inf.GetStore().GetByKey("survive/after")
		_, before, _ := inf.GetStore().GetByKey("survive/before")
		return after && !before
	}, 60*time.Second, 50*time.Millisecond, "the informer sees changes made after its watch restarted")
}

// Two gateway replicas with the same keys: a token one issues works on the other, and RBAC
// changes and a deleted service account reach both.
func TestGatewayReplicasShareIdentity(t *testing.T) {
	c := startCluster(t)
	// The second replica has its own data directory (its own admin kubeconfig) holding the
	// cluster's certificates and keys, as compose's gateways share the volume.
	data2 := tempDataDir(t)
	require.NoError(t, os.CopyFS(filepath.Join(data2, "pki"), os.DirFS(c.pki.Dir)))
	start(t, "gateway", "--data-dir", data2, "--secure-port", "0", "--bind-address", "127.0.0.1", "--instance-id", "gateway-2",
		"--nats-url", c.nats.URL(), "--lifecycle-ttl", "3s",
		"--aggregator-address", c.addr("aggregator"), "--core-address", c.addr("core"), "--extensions-address", c.addr("extensions"))
	second := waitKubeconfig(t, filepath.Join(data2, "admin.kubeconfig"))
	second.waitReady(60 * time.Second)
	require.NotEqual(t, c.client.base, second.base)

	first := kc{t: t, kubeconfig: filepath.Join(c.data, "admin.kubeconfig")}
	first.run("create", "namespace", "shared")
	first.run("create", "serviceaccount", "robot", "-n", "shared")
	token := strings.TrimSpace(first.run("create", "token", "robot", "-n", "shared"))
	robot2 := kc{t: t, kubeconfig: tokenKubeconfig(t, second, token)}
	assert.Equal(t, "system:serviceaccount:shared:robot", robot2.run("auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"))
	assert.Contains(t, robot2.fails("get", "configmaps", "-n", "shared"), "forbidden")

	first.run("create", "rolebinding", "robot-view", "-n", "shared", "--clusterrole=view", "--serviceaccount=shared:robot")
	bound := time.Now()
	require.Eventually(t, func() bool {
		_, err := kubectl(t, robot2.kubeconfig, "get", "configmaps", "-n", "shared")
		return err == nil
	}, 5*time.Second, 10*time.Millisecond)
	t.Logf("the binding made through one gateway applied on the other after %s", time.Since(bound).Round(time.Millisecond))

	first.run("delete", "serviceaccount", "robot", "-n", "shared")
	require.Eventually(t, func() bool {
		out, err := kubectl(t, robot2.kubeconfig, "get", "configmaps", "-n", "shared")
		return err != nil && strings.Contains(out, "Unauthorized")
	}, 5*time.Second, 10*time.Millisecond, "the other replica stops the token too")
}
