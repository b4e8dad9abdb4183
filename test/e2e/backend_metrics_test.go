package e2e

import (
	"crypto/tls"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apichain/apichain/pkg/certs"
)

// A backend's /metrics, served on --metrics-bind-address with its serving certificate, lets in
// only callers the API server authenticates and allows get on /metrics, as kube's components
// do (delegated authentication and authorization): the admin's client certificate and a
// ServiceAccount token bound to system:monitoring get grpc-go's server metrics and kube's
// process metrics; an anonymous caller gets 401 and a ServiceAccount without the permission 403.
func TestBackendMetricsDelegatedAuth(t *testing.T) {
	c := startCluster(t)
	kubeconfig := filepath.Join(c.data, "admin.kubeconfig")
	metricsPort := freePort(t)
	start(t, "core", "--bind-address", "127.0.0.1:"+strconv.Itoa(freePort(t)), "--instance-id", "core-metrics",
		"--tls-cert-file", c.pki.BackendCertFile, "--tls-private-key-file", c.pki.BackendKeyFile,
		"--client-ca-file", c.pki.CAFile, "--etcd-servers", c.etcd, "--nats-url", c.nats.URL(), "--lifecycle-ttl", "3s",
		"--metrics-bind-address", "127.0.0.1:"+strconv.Itoa(metricsPort),
		"--authentication-kubeconfig", kubeconfig, "--authorization-kubeconfig", kubeconfig)
	c.client.eventuallyBody("/readyz?verbose", http.StatusOK, 30*time.Second, "[+]core ok (2/2 instances ready)")

	roots, err := certs.PoolFromFile(c.pki.CAFile)
	require.NoError(t, err)
	scrape := func(cert []tls.Certificate, token string) (int, string) {
		hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
			RootCAs: roots, ServerName: "apichain-backend", Certificates: cert, MinVersion: tls.VersionTLS12}}}
		req, err := http.NewRequest(http.MethodGet, "https://127.0.0.1:"+strconv.Itoa(metricsPort)+"/metrics", nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	admin, err := tls.LoadX509KeyPair(c.pki.AdminCertFile, c.pki.AdminKeyFile)
	require.NoError(t, err)

	// Requests through the gateway reach the new core too; its server metrics count them.
	var body string
	require.Eventually(t, func() bool {
		for range 10 {
			c.client.get("/api/v1/namespaces/default")
		}
		var code int
		code, body = scrape([]tls.Certificate{admin}, "")
		return code == http.StatusOK && strings.Contains(body, `apichain_grpc_server_handled_total{grpc_code="OK",grpc_method="Get",grpc_service="apichain.resource.v1.ResourceService"`)
	}, 30*time.Second, 200*time.Millisecond, "the admin scrapes core's metrics, with its gRPC calls counted; last:\n%s", &body)
	assert.Contains(t, body, "process_cpu_seconds_total")
	assert.Contains(t, body, "# TYPE apichain_grpc_server_handling_seconds histogram")

	code, body := scrape(nil, "")
	assert.Equal(t, http.StatusUnauthorized, code, body)
	assert.Contains(t, body, `"reason":"Unauthorized"`)

	k := kc{t: t, kubeconfig: kubeconfig}
	k.run("create", "serviceaccount", "prometheus", "-n", "default")
	k.run("create", "clusterrolebinding", "prometheus-monitoring", "--clusterrole=system:monitoring", "--serviceaccount=default:prometheus")
	k.run("create", "serviceaccount", "nobody", "-n", "default")
	monitoring := strings.TrimSpace(k.run("create", "token", "prometheus", "-n", "default"))
	nobody := strings.TrimSpace(k.run("create", "token", "nobody", "-n", "default"))
	code, body = scrape(nil, monitoring)
	assert.Equal(t, http.StatusOK, code, body)
	code, body = scrape(nil, nobody)
	assert.Equal(t, http.StatusForbidden, code, body)
	assert.Contains(t, body, `cannot get path \"/metrics\"`)
	code, _ = scrape(nil, "not-a-token")
	assert.Equal(t, http.StatusUnauthorized, code)
}
