package e2e

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apichain/apichain/pkg/certs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
)

// aggregatedServer is a stand-in aggregated API server for wardle.example.com/v1alpha1 on
// loopback, with a certificate for its Service's name (wardle.default.svc). It
// keeps the headers of the last request it got, and holds a watch open after its first event
// until release is closed.
type aggregatedServer struct {
	port     string
	caBundle string
	release  chan struct{}
	stop     func()
	mu       sync.Mutex
	last     http.Header
	lastPeer *x509.Certificate // the client certificate of the last request
}

func startAggregatedServer(t *testing.T) *aggregatedServer {
	ca, err := certs.NewCA("wardle-test-ca", time.Hour)
	require.NoError(t, err)
	certPEM, keyPEM, err := ca.IssueServing("wardle", []string{"wardle.default.svc"}, time.Hour)
	require.NoError(t, err)
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	require.NoError(t, err)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair},
		MinVersion: tls.VersionTLS12, ClientAuth: tls.RequestClientCert})
	require.NoError(t, err)
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	s := &aggregatedServer{port: port, caBundle: base64.StdEncoding.EncodeToString(ca.CertPEM), release: make(chan struct{})}
	srv := &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	s.stop = func() { _ = srv.Close() }
	t.Cleanup(s.stop)
	return s
}

// manifest registers the server as v1alpha1.wardle.example.com behind the Service
// default/wardle (headless, or with a cluster IP) on loopback.
func (s *aggregatedServer) manifest(headless bool) string {
	port, _ := strconv.Atoi(s.port)
	return loopbackService("default", "wardle", port, headless) + fmt.Sprintf(`---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1alpha1.wardle.example.com}
spec: {group: wardle.example.com, version: v1alpha1, service: {namespace: default, name: wardle}, caBundle: %s, groupPriorityMinimum: 1000, versionPriority: 15}
`, s.caBundle)
}

// loopbackService is a Service (headless, or with a cluster IP) on port 443 whose
// EndpointSlice leads to port on this host: its endpoint is wardle.localhost, an FQDN under
// RFC 6761's loopback domain, since IP endpoints may not be loopback.
func loopbackService(namespace, name string, port int, headless bool) string {
	clusterIP := ""
	if headless {
		clusterIP = "clusterIP: None, "
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Service
metadata: {name: %[2]s, namespace: %[1]s}
spec: {%[3]sports: [{name: https, port: 443, targetPort: %[4]d}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: %[2]s-1, namespace: %[1]s, labels: {kubernetes.io/service-name: %[2]s}}
addressType: FQDN
endpoints: [{addresses: [wardle.localhost]}]
ports: [{name: https, port: %[4]d}]
`, namespace, name, clusterIP, port)
}

func (s *aggregatedServer) headers() http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last.Clone()
}

func (s *aggregatedServer) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.last = r.Header.Clone()
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		s.lastPeer = r.TLS.PeerCertificates[0]
	}
	s.mu.Unlock()
	const gv = "/apis/wardle.example.com/v1alpha1"
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Header.Get("Upgrade") == "test-echo": // echoes what it reads, upper-cased
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		fmt.Fprint(conn, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: test-echo\r\n\r\n")
		for {
			line, err := brw.ReadString('\n')
			if err != nil {
				return
			}
			fmt.Fprint(conn, strings.ToUpper(line))
		}
	case r.URL.Path == gv:
		fmt.Fprint(w, `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"wardle.example.com/v1alpha1",`+
			`"resources":[{"name":"flunders","singularName":"flunder","namespaced":true,"kind":"Flunder","verbs":["get","list","watch","create"]}]}`)
	case r.URL.Path == gv+"/namespaces/default/flunders" && r.Method == http.MethodPost:
		body, _ := io.ReadAll(r.Body)
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(body)
	case r.URL.Path == gv+"/namespaces/default/flunders" && r.URL.Query().Get("watch") == "true":
		flusher := w.(http.Flusher)
		fmt.Fprintln(w, `{"type":"ADDED","object":{"kind":"Flunder","apiVersion":"wardle.example.com/v1alpha1","metadata":{"name":"first"}}}`)
		flusher.Flush()
		select {
		case <-s.release:
		case <-r.Context().Done():
			return
		case <-time.After(20 * time.Second):
		}
		fmt.Fprintln(w, `{"type":"ADDED","object":{"kind":"Flunder","apiVersion":"wardle.example.com/v1alpha1","metadata":{"name":"second"}}}`)
	case r.URL.Path == gv+"/namespaces/default/flunders":
		fmt.Fprintf(w, `{"kind":"FlunderList","apiVersion":"wardle.example.com/v1alpha1","metadata":{},"items":[{"metadata":{"name":"f1"}}]}`)
	default:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"no such flunder path","reason":"NotFound","code":404}`)
	}
}

// A remote APIService's requests reach its aggregated API server through the gateway and the
// aggregator (--enable-aggregator-routing: a ready endpoint of its Service), with the caller
// in front-proxy headers and nothing the client claimed about itself; bodies go both ways and a
// watch streams event by event.
func TestAggregatedAPIServerProxied(t *testing.T) {
	srv := startAggregatedServer(t)
	c, _ := startAllInOne(t, "--enable-aggregator-routing")
	kubeconfig := filepath.Join(c.dataDir(), "admin.kubeconfig")
	manifest := srv.manifest(false)
	file := filepath.Join(t.TempDir(), "wardle.yaml")
	writeFile(t, file, manifest)
	out, err := kubectl(t, kubeconfig, "apply", "-f", file)
	require.NoError(t, err, out)

	const gv = "/apis/wardle.example.com/v1alpha1"
	c.eventuallyBody(gv, http.StatusOK, 15*time.Second, `"groupVersion":"wardle.example.com/v1alpha1"`, `"name":"flunders"`)
	out, err = kubectl(t, kubeconfig, "get", "apiservice", "v1alpha1.wardle.example.com")
	require.NoError(t, err, out)
	assert.Regexp(t, `(?m)^v1alpha1.wardle.example.com\s+default/wardle\s+True\s+\S+$`, out)
	out, err = kubectl(t, kubeconfig, "get", "apiservice", "v1alpha1.wardle.example.com", "-o", "jsonpath={.status.conditions[0].reason}: {.status.conditions[0].message}")
	require.NoError(t, err, out)
	assert.Equal(t, "Passed: all checks passed", out)

	// Discovery lists the server's resources, so kubectl knows them by name.
	require.Eventually(t, func() bool {
		out, err := kubectl(t, kubeconfig, "api-resources", "--api-group=wardle.example.com", "--no-headers")
		return err == nil && strings.Contains(out, "flunders") && strings.Contains(out, "wardle.example.com/v1alpha1")
	}, 15*time.Second, 100*time.Millisecond)
	out, err = kubectl(t, kubeconfig, "get", "flunders", "-n", "default")
	require.NoError(t, err, out)
	assert.Contains(t, out, "f1")

	out, err = kubectl(t, kubeconfig, "get", "--raw", gv+"/namespaces/default/flunders")
	require.NoError(t, err, out)
	assert.Contains(t, out, `"kind":"FlunderList"`)
	h := srv.headers()
	assert.Equal(t, "kubernetes-admin", h.Get("X-Remote-User"))
	assert.Contains(t, h.Values("X-Remote-Group"), "system:masters")
	assert.Empty(t, h.Get("Authorization"))

	// The server can trust those headers as an aggregated server does: the aggregator's client
	// certificate verifies against the requestheader CA that
	// kube-system/extension-apiserver-authentication publishes, with an allowed name.
	var info struct {
		Data map[string]string `json:"data"`
	}
	require.Eventually(t, func() bool {
		out, err := kubectl(t, kubeconfig, "get", "configmap", "extension-apiserver-authentication", "-n", "kube-system", "-o", "json")
		return err == nil && json.Unmarshal([]byte(out), &info) == nil && info.Data["requestheader-client-ca-file"] != ""
	}, 15*time.Second, 100*time.Millisecond)
	assert.Equal(t, `["front-proxy-client"]`, info.Data["requestheader-allowed-names"])
	assert.Equal(t, `["X-Remote-User"]`, info.Data["requestheader-username-headers"])
	assert.Equal(t, `["X-Remote-Group"]`, info.Data["requestheader-group-headers"])
	assert.Equal(t, `["X-Remote-Extra-"]`, info.Data["requestheader-extra-headers-prefix"])
	clientCA, err := os.ReadFile(filepath.Join(c.dataDir(), "pki", "ca.crt"))
	require.NoError(t, err)
	assert.Equal(t, string(clientCA), info.Data["client-ca-file"])
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM([]byte(info.Data["requestheader-client-ca-file"])))
	srv.mu.Lock()
	peer := srv.lastPeer
	srv.mu.Unlock()
	require.NotNil(t, peer, "the aggregator presents a client certificate")
	assert.Equal(t, "front-proxy-client", peer.Subject.CommonName)
	_, err = peer.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	assert.NoError(t, err)

	// The gateway itself takes front-proxy headers from that certificate, and only from it.
	proxyCert, err := tls.LoadX509KeyPair(filepath.Join(c.dataDir(), "pki", "front-proxy-client.crt"), filepath.Join(c.dataDir(), "pki", "front-proxy-client.key"))
	require.NoError(t, err)
	whoami := func(hc *http.Client) (int, string) {
		req, err := http.NewRequest(http.MethodPost, c.base+"/apis/authentication.k8s.io/v1/selfsubjectreviews",
			strings.NewReader(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Remote-User", "bob")
		req.Header.Add("X-Remote-Group", "devs")
		req.Header.Set("X-Remote-Extra-Scopes", "read")
		resp, err := hc.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	tlsCfg := c.anonymous().Transport.(*http.Transport).TLSClientConfig.Clone()
	tlsCfg.Certificates = []tls.Certificate{proxyCert}
	code, review := whoami(&http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}, Timeout: 10 * time.Second})
	assert.Equal(t, http.StatusCreated, code, review)
	assert.Contains(t, review, `"username":"bob"`)
	assert.Contains(t, review, `"groups":["devs","system:authenticated"]`)
	assert.Contains(t, review, `"extra":{"scopes":["read"]}`)
	_, review = whoami(c.http) // the admin's certificate is no front proxy's
	assert.Contains(t, review, `"username":"kubernetes-admin"`)

	// What the client says about itself does not pass.
	req, err := http.NewRequest(http.MethodGet, c.base+gv+"/namespaces/default/flunders", nil)
	require.NoError(t, err)
	req.Header.Set("X-Remote-User", "mallory")
	req.Header.Set("X-Remote-Group", "system:masters")
	req.Header.Set("X-Remote-Extra-Scopes", "all")
	resp, err := c.http.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	h = srv.headers()
	assert.Equal(t, []string{"kubernetes-admin"}, h.Values("X-Remote-User"))
	assert.NotContains(t, h.Values("X-Remote-Group"), "mallory")
	assert.Empty(t, h.Values("X-Remote-Extra-Scopes"))

	// A body goes there and back, with the server's status.
	body := `{"apiVersion":"wardle.example.com/v1alpha1","kind":"Flunder","metadata":{"name":"posted"}}`
	resp, err = c.http.Post(c.base+gv+"/namespaces/default/flunders", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.JSONEq(t, body, string(got))

	// The server's own errors pass through.
	code, errBody, _ := c.get(gv + "/nothing/here")
	assert.Equal(t, http.StatusNotFound, code)
	assert.Contains(t, errBody, "no such flunder path")

	// A watch streams: the first event arrives while the server still holds the second.
	resp, err = c.http.Get(c.base + gv + "/namespaces/default/flunders?watch=true")
	require.NoError(t, err)
	defer resp.Body.Close()
	lines := bufio.NewReader(resp.Body)
	first, err := lines.ReadString('\n')
	require.NoError(t, err)
	var ev struct {
		Type   string `json:"type"`
		Object struct {
			Metadata struct{ Name string } `json:"metadata"`
		} `json:"object"`
	}
	require.NoError(t, json.Unmarshal([]byte(first), &ev))
	assert.Equal(t, "first", ev.Object.Metadata.Name)
	close(srv.release)
	second, err := lines.ReadString('\n')
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal([]byte(second), &ev))
	assert.Equal(t, "second", ev.Object.Metadata.Name)
	_, err = lines.ReadString('\n')
	assert.ErrorIs(t, err, io.EOF, "the watch ends when the server ends it")

	// An upgrade request becomes a connection to the server, both ways.
	upgradeCfg, err := rest.TLSConfigFor(c.config)
	require.NoError(t, err)
	upgradeCfg.NextProtos = []string{"http/1.1"}
	conn, err := tls.Dial("tcp", strings.TrimPrefix(c.base, "https://"), upgradeCfg)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(20*time.Second)))
	fmt.Fprintf(conn, "POST %s/namespaces/default/flunders/f1/exec HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: test-echo\r\n\r\n", gv)
	br := bufio.NewReader(conn)
	status, err := br.ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "HTTP/1.1 101 Switching Protocols\r\n", status)
	for line, _ := br.ReadString('\n'); line != "\r\n"; line, _ = br.ReadString('\n') {
		require.NotEmpty(t, line, "the response head ends")
	}
	for _, word := range []string{"hello\n", "again\n"} {
		fmt.Fprint(conn, word)
		echoed, err := br.ReadString('\n')
		require.NoError(t, err)
		assert.Equal(t, strings.ToUpper(word), echoed)
	}
}

// An APIService that is not available says why, as kube does, and its requests get a fast 503
// naming it instead of waiting on a server that is not there.
func TestAggregatedAPIServerUnavailable(t *testing.T) {
	srv := startAggregatedServer(t)
	c, _ := startAllInOne(t, "--enable-aggregator-routing")
	kubeconfig := filepath.Join(c.dataDir(), "admin.kubeconfig")
	file := filepath.Join(t.TempDir(), "apiservices.yaml")
	writeFile(t, file, `apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1.missing.example.com}
spec: {group: missing.example.com, version: v1, service: {namespace: default, name: nope}, groupPriorityMinimum: 100, versionPriority: 10, insecureSkipTLSVerify: true}
---
apiVersion: v1
kind: Service
metadata: {name: noport, namespace: default}
spec: {ports: [{name: https, port: 8443}]}
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1.noport.example.com}
spec: {group: noport.example.com, version: v1, service: {namespace: default, name: noport}, groupPriorityMinimum: 100, versionPriority: 10, insecureSkipTLSVerify: true}
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1.noslices.example.com}
spec: {group: noslices.example.com, version: v1, service: {namespace: default, name: noport, port: 8443}, groupPriorityMinimum: 100, versionPriority: 10, insecureSkipTLSVerify: true}
---
`+srv.manifest(false))
	out, err := kubectl(t, kubeconfig, "apply", "-f", file)
	require.NoError(t, err, out)
	condition := func(name string) string {
		out, _ := kubectl(t, kubeconfig, "get", "apiservice", name, "-o", "jsonpath={.status.conditions[0].status} {.status.conditions[0].reason}: {.status.conditions[0].message}")
		return out
	}
	for name, want := range map[string]string{
		"v1.missing.example.com":      `False ServiceNotFound: service/nope in "default" is not present`,
		"v1.noport.example.com":       `False ServicePortError: service/noport in "default" is not listening on port 443`,
		"v1.noslices.example.com":     `False EndpointsNotFound: cannot find endpointslices for service/noport in "default"`,
		"v1alpha1.wardle.example.com": `True Passed: all checks passed`,
	} {
		require.Eventually(t, func() bool { return condition(name) == want }, 15*time.Second, 50*time.Millisecond, "%s: %s", name, condition(name))
	}
	out, err = kubectl(t, kubeconfig, "get", "apiservice", "v1.missing.example.com")
	require.NoError(t, err, out)
	assert.Regexp(t, `(?m)^v1.missing.example.com\s+default/nope\s+False \(ServiceNotFound\)\s+\S+$`, out)

	start := time.Now()
	code, body, _ := c.get("/apis/missing.example.com/v1/things")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, `service unavailable: APIService v1.missing.example.com is not available (ServiceNotFound: service/nope in \"default\" is not present)`)
	assert.Less(t, time.Since(start), 2*time.Second, "no wait on a server that is not there")

	// The server dies: the first request that cannot reach it gets kube's 503, and its
	// availability is checked again right away (not at the next 30 s).
	srv.stop()
	code, body, _ = c.get("/apis/wardle.example.com/v1alpha1/namespaces/default/flunders")
	assert.Equal(t, http.StatusServiceUnavailable, code, body)
	start = time.Now()
	code, body, _ = c.get("/apis/wardle.example.com/v1alpha1/namespaces/default/flunders")
	assert.Equal(t, http.StatusServiceUnavailable, code, body)
	assert.Contains(t, body, "APIService v1alpha1.wardle.example.com", "the next ones fail at once, naming it")
	assert.Less(t, time.Since(start), time.Second)
	require.Eventually(t, func() bool {
		return strings.HasPrefix(condition("v1alpha1.wardle.example.com"), "False FailedDiscoveryCheck: failing or missing response from https://")
	},
		15*time.Second, 50*time.Millisecond, condition("v1alpha1.wardle.example.com"))
	code, body, _ = c.get("/apis/wardle.example.com/v1alpha1/namespaces/default/flunders")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "APIService v1alpha1.wardle.example.com is not available (FailedDiscoveryCheck: ")
	// kube-aggregator's metrics: both unavailable, the one that was available counted by its reason.
	c.eventuallyBody("/metrics", http.StatusOK, 10*time.Second,
		`aggregator_unavailable_apiservice{name="v1.missing.example.com"} 1`,
		`aggregator_unavailable_apiservice{name="v1alpha1.wardle.example.com"} 1`,
		`aggregator_unavailable_apiservice_total{name="v1alpha1.wardle.example.com",reason="FailedDiscoveryCheck"} 1`)

	// Dead aggregated APIs break nothing else: discovery says which they are and kubectl goes on.
	var hdr http.Header
	require.Eventually(t, func() bool {
		_, _, hdr = c.get("/apis")
		return strings.Contains(strings.Join(hdr.Values("Warning"), "\n"), "APIService v1alpha1.wardle.example.com is not available (FailedDiscoveryCheck")
	}, 15*time.Second, 100*time.Millisecond, "%v", hdr)
	warnings := strings.Join(hdr.Values("Warning"), "\n")
	assert.Contains(t, warnings, `APIService v1.missing.example.com is not available (ServiceNotFound: service/nope in \"default\" is not present); missing.example.com/v1 is left out of discovery`)
	assert.Contains(t, warnings, "wardle.example.com/v1alpha1 is listed as its server last listed it (stale)")
	out, err = kubectl(t, kubeconfig, "api-resources", "--no-headers")
	require.NoError(t, err, out)
	assert.Contains(t, out, "deployments")
	assert.NotContains(t, out, "flunders", "a stale group is left out by kubectl")
	out, err = kubectl(t, kubeconfig, "get", "configmaps", "-A")
	require.NoError(t, err, out)
}

// With default flags, a headless Service whose EndpointSlice names a host under localhost (an
// FQDN, RFC 6761's loopback domain: IP endpoints may not be loopback) routes to a server on
// loopback.
func TestAggregatedAPIServerDefaults(t *testing.T) {
	srv := startAggregatedServer(t)
	c, _ := startAllInOne(t)
	kubeconfig := filepath.Join(c.dataDir(), "admin.kubeconfig")
	file := filepath.Join(t.TempDir(), "wardle.yaml")
	writeFile(t, file, srv.manifest(true))
	out, err := kubectl(t, kubeconfig, "apply", "-f", file)
	require.NoError(t, err, out)
	require.Eventually(t, func() bool {
		out, err = kubectl(t, kubeconfig, "get", "flunders", "-n", "default")
		return err == nil && strings.Contains(out, "f1")
	}, 20*time.Second, 100*time.Millisecond, out)
	assert.Equal(t, "kubernetes-admin", srv.headers().Get("X-Remote-User"))
}
