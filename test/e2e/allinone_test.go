package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apichain/apichain/pkg/embedded"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/version"
)

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// The all-in-one's /readyz lists hooks of all three backends and the gateway, and turns 200
// only once every hook finished: here etcd starts late, so the backends' storage-readiness
// hooks cannot finish until it does.
func TestAllInOneReadyzWaitsForEveryHook(t *testing.T) {
	data := tempDataDir(t)
	etcdClient, etcdPeer := freePort(t), freePort(t)
	p := start(t, "apichain", "--data-dir", data, "--secure-port", "0",
		"--etcd-servers", fmt.Sprintf("http://127.0.0.1:%d", etcdClient))
	kubeconfig := filepath.Join(data, "admin.kubeconfig")
	c := waitKubeconfig(t, kubeconfig)

	// Without etcd the backends cannot finish storage-readiness: readyz is 500 and says which.
	body := c.eventuallyBody("/readyz?verbose", http.StatusInternalServerError, 30*time.Second,
		"[-]core/poststarthook/storage-readiness failed: reason withheld",
		"[-]extensions/poststarthook/storage-readiness failed",
		"[-]aggregator/poststarthook/storage-readiness failed",
		"readyz check failed")
	assert.Contains(t, body, "[+]poststarthook/start-lifecycle-watcher ok")

	etcd, err := embedded.StartEtcd(context.Background(), t.TempDir(), etcdClient, etcdPeer)
	require.NoError(t, err)
	defer etcd.Stop()

	c.waitReady(60 * time.Second)
	out, err := kubectl(t, kubeconfig, "get", "--raw", "/readyz?verbose")
	require.NoError(t, err, out)
	for _, want := range []string{
		"[+]poststarthook/start-lifecycle-watcher ok",
		"[+]poststarthook/delegation-chain-complete ok",
		"[+]aggregator ok (1/1 instances ready)",
		"[+]core ok (1/1 instances ready)",
		"[+]extensions ok (1/1 instances ready)",
		"[+]core/poststarthook/storage-readiness ok (",
		"[+]extensions/poststarthook/storage-readiness ok (",
		"[+]aggregator/poststarthook/storage-readiness ok (",
		"[+]aggregator/autoregister-completion ok",
		"[+]shutdown ok",
		"readyz check passed",
	} {
		assert.Contains(t, out, want)
	}
	assert.NotContains(t, out, "[-]")
	assert.True(t, strings.HasSuffix(strings.TrimSpace(out), "[+]shutdown ok\nreadyz check passed"), "shutdown is listed last:\n%s", out)

	// Single checks, local and remote.
	for _, check := range []string{"ping", "poststarthook/delegation-chain-complete", "core/poststarthook/storage-readiness", "extensions"} {
		out, err := kubectl(t, kubeconfig, "get", "--raw", "/readyz/"+check)
		require.NoError(t, err, check)
		assert.Equal(t, "ok", out, check)
	}
	out, err = kubectl(t, kubeconfig, "get", "--raw", "/readyz/no-such-check")
	require.Error(t, err)

	// Excluding a failing-to-be check is honoured and listed.
	code, body, _ := c.get("/readyz?verbose&exclude=core&exclude=nope")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "[+]core excluded: ok")
	assert.Contains(t, body, `warn: some health checks cannot be excluded: no matches for "nope"`)

	p.signal(sigterm)
	assert.Equal(t, 0, p.wait(60*time.Second), p.output())
}

// Kube's discovery and error shapes through the chain.
func TestAllInOneDiscoveryAndErrors(t *testing.T) {
	c, _ := startAllInOne(t)

	code, body, hdr := c.get("/apis/no.such.group/v1/things")
	assert.Equal(t, http.StatusNotFound, code)
	assert.Equal(t, "application/json", hdr.Get("Content-Type"))
	assert.JSONEq(t, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","code":404}`, body)
	assert.NotEmpty(t, hdr.Get("Audit-Id"))

	code, body, _ = c.get("/no/such/path")
	assert.Equal(t, http.StatusNotFound, code)
	assert.Equal(t, "404 page not found\n", body)

	code, body, _ = c.get("/apis")
	require.Equal(t, http.StatusOK, code, body)
	for _, g := range []string{`"name":"apps"`, `"name":"coordination.k8s.io"`, `"name":"events.k8s.io"`, `"name":"apiextensions.k8s.io"`} {
		assert.Contains(t, body, g)
	}
	// The aggregator's group first, as in kube.
	assert.Contains(t, body, `{"kind":"APIGroupList","apiVersion":"v1","groups":[{"name":"apiregistration.k8s.io",`)
	// The groups in kube's order, by their APIServices' priorities (kube-apiserver 1.37.2's /apis).
	var groups struct {
		Groups []struct{ Name string } `json:"groups"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &groups))
	var names []string
	for _, g := range groups.Groups {
		names = append(names, g.Name)
	}
	assert.Equal(t, []string{"apiregistration.k8s.io", "apps", "events.k8s.io", "authentication.k8s.io", "authorization.k8s.io",
		"autoscaling", "batch", "certificates.k8s.io", "networking.k8s.io", "policy", "rbac.authorization.k8s.io", "storage.k8s.io",
		"admissionregistration.k8s.io", "apiextensions.k8s.io", "scheduling.k8s.io", "coordination.k8s.io", "node.k8s.io",
		"discovery.k8s.io", "resource.k8s.io", "flowcontrol.apiserver.k8s.io", "storagemigration.k8s.io"}, names)

	// Aggregated discovery, as kubectl asks for it first.
	req, err := http.NewRequest(http.MethodGet, c.base+"/apis", nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json")
	resp, err := c.http.Do(req)
	require.NoError(t, err)
	agg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", resp.Header.Get("Content-Type"))
	assert.Contains(t, string(agg), `"kind":"APIGroupDiscoveryList"`)
	assert.Contains(t, string(agg), `"subresource":"scale","responseKind":{"group":"autoscaling","version":"v1","kind":"Scale"}`)
	// kube's ETag, and 304 for a client that has the document already.
	etag := resp.Header.Get("ETag")
	assert.Regexp(t, `^"[0-9A-F]{128}"$`, etag)
	assert.Equal(t, "public", resp.Header.Get("Cache-Control"))
	req.Header.Set("If-None-Match", etag)
	resp, err = c.http.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotModified, resp.StatusCode)

	for path, want := range map[string]string{
		"/api":                          `"kind":"APIVersions"`,
		"/api/v1":                       `"groupVersion":"v1"`,
		"/apis/apiextensions.k8s.io/v1": `"groupVersion":"apiextensions.k8s.io/v1"`,
		"/apis/apiregistration.k8s.io":  `"kind":"APIGroup"`,
		"/apis/coordination.k8s.io/v1":  `"groupVersion":"coordination.k8s.io/v1"`,
	} {
		code, body, _ := c.get(path)
		assert.Equal(t, http.StatusOK, code, path)
		assert.Contains(t, body, want, path)
	}

	// /version is the build that serves it, as kubectl shows it.
	versionJSON, err := exec.Command("kubectl", "--kubeconfig", filepath.Join(c.data, "admin.kubeconfig"), "version", "-o", "json").Output()
	require.NoError(t, err)
	var v struct {
		Server version.Info `json:"serverVersion"`
	}
	require.NoError(t, json.Unmarshal(versionJSON, &v), "%s", versionJSON)
	assert.Equal(t, "1", v.Server.Major)
	assert.Equal(t, "37", v.Server.Minor)
	assert.True(t, strings.HasPrefix(v.Server.GitVersion, "v1.37.0-apichain"), v.Server.GitVersion)
	if head := headCommit(); head != "" {
		assert.Equal(t, head, v.Server.GitCommit)
		assert.Contains(t, []string{"clean", "dirty"}, v.Server.GitTreeState)
	}
	built, err := time.Parse(time.RFC3339, v.Server.BuildDate)
	require.NoError(t, err)
	assert.WithinDuration(t, time.Now(), built, time.Hour, "the binary was built for this test run")

	// No credentials: system:anonymous, and RBAC's default roles make health and version
	// public, the API not (kube's 403, byte for byte as recorded from kube-apiserver).
	anon := c.anonymous()
	for _, path := range []string{"/readyz", "/livez", "/healthz", "/version"} {
		code, body, _ = doGet(t, anon, c.base+path)
		assert.Equal(t, http.StatusOK, code, "%s: %s", path, body)
	}
	k := kc{t: t, kubeconfig: filepath.Join(c.dataDir(), "admin.kubeconfig")}
	k.run("create", "namespace", "demo")
	code, body, _ = doGet(t, anon, c.base+"/api/v1/namespaces/demo/configmaps")
	assert.Equal(t, http.StatusForbidden, code)
	assert.JSONEq(t, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
		"message":"configmaps is forbidden: User \"system:anonymous\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"demo\"",
		"reason":"Forbidden","details":{"kind":"configmaps"},"code":403}`, body)
	code, body, _ = doGet(t, anon, c.base+"/debug/pprof/")
	assert.Equal(t, http.StatusForbidden, code, "pprof is not public")
	assert.Contains(t, body, `forbidden: User \"system:anonymous\" cannot get path \"/debug/pprof/\"`)

	// Malformed timeout is a 400 Status, not a 500.
	code, body, _ = c.get("/api/v1?timeout=banana")
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, body, `"reason":"BadRequest"`)

	out, err := kubectl(t, filepath.Join(c.dataDir(), "admin.kubeconfig"), "get", "--raw", "/api/v1")
	require.NoError(t, err, out)
}

// An over-limit burst gets 429 with Retry-After (system:masters is exempt, as in kube, so the
// burst comes from a token user, whom AlwaysAllow lets hold a CPU profile).
func TestMaxInFlightBurst(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	require.NoError(t, os.WriteFile(tokens, []byte("burst-token,alice,1001,\"devs\"\n"), 0o600))
	c, _ := startAllInOne(t, "--enable-priority-and-fairness=false", "--max-requests-inflight", "1", "--token-auth-file", tokens, "--authorization-mode=AlwaysAllow")
	alice := c.anonymous()
	get := func(path string) (int, http.Header) {
		req, err := http.NewRequest(http.MethodGet, c.base+path, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer burst-token")
		resp, err := alice.Do(req)
		if err != nil {
			return 0, nil
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, resp.Header
	}
	// A CPU profile holds its request for its duration: one in flight fills the limit.
	first := make(chan int, 1)
	go func() {
		code, _ := get("/debug/pprof/profile?seconds=3")
		first <- code
	}()
	var code int
	var hdr http.Header
	require.Eventually(t, func() bool {
		code, hdr = get("/version")
		return code == http.StatusTooManyRequests
	}, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, "1", hdr.Get("Retry-After"))
	code, _, _ = c.get("/version")
	assert.Equal(t, http.StatusOK, code, "system:masters is never throttled")
	assert.Equal(t, http.StatusOK, <-first)
	code, _ = get("/version")
	assert.Equal(t, http.StatusOK, code, "the limit frees up once the request finished")
}

// One all-in-one per data directory: a second one on the same directory (another port) fails
// at once, naming the first's PID, and the first goes on serving. A signal during startup ends
// a start that waits (here on an etcd nobody serves).
func TestDataDirHasOneOwner(t *testing.T) {
	c, first := startAllInOne(t)
	second := start(t, "apichain", "--data-dir", c.dataDir(), "--secure-port", "0")
	assert.NotEqual(t, 0, second.wait(20*time.Second), "the second all-in-one fails")
	assert.Contains(t, second.output(), fmt.Sprintf("data directory %s is in use by process %d (it holds %s)",
		c.dataDir(), first.cmd.Process.Pid, filepath.Join(c.dataDir(), "apichain.lock")))
	c.waitReady(10 * time.Second)

	waiting := start(t, "apichain", "--data-dir", tempDataDir(t), "--secure-port", "0",
		"--etcd-servers", fmt.Sprintf("http://127.0.0.1:%d", freePort(t)))
	require.Eventually(t, func() bool { return strings.Contains(waiting.output(), "apichain all-in-one starting") },
		30*time.Second, 20*time.Millisecond, "the all-in-one gets as far as waiting on etcd")
	waiting.signal(sigterm)
	waiting.wait(20 * time.Second)
}
