package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apichain/apichain/pkg/certs"
	"github.com/apichain/apichain/pkg/embedded"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The real k8s.io/sample-apiserver, at the k8s.io version the rest of apichain uses, built once
// from the module proxy (go install with its own go.mod, so nothing of it is vendored here;
// static, so the compose test can run it on a scratch image too), and its artifacts directory
// (the RBAC a user applies to install it).
var sampleBuild struct {
	once      sync.Once
	artifacts string
	err       error
}

func buildSampleAPIServer(t *testing.T) string {
	t.Helper()
	sampleBuild.once.Do(func() {
		version, err := k8sVersion()
		if err != nil {
			sampleBuild.err = fmt.Errorf("the k8s.io version: %v", err)
			return
		}
		module := "k8s.io/sample-apiserver@" + version
		env := append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "CGO_ENABLED=0", "GOBIN="+bin)
		install := exec.Command("go", "install", module)
		install.Dir, install.Env = os.TempDir(), env
		if out, err := install.CombinedOutput(); err != nil {
			sampleBuild.err = fmt.Errorf("go install %s: %v\n%s", module, err, out)
			return
		}
		download := exec.Command("go", "mod", "download", "-json", module)
		download.Dir, download.Env = os.TempDir(), env
		out, err := download.Output()
		if err != nil {
			sampleBuild.err = fmt.Errorf("go mod download %s: %v", module, err)
			return
		}
		var m struct{ Dir string }
		sampleBuild.err = json.Unmarshal(out, &m)
		sampleBuild.artifacts = filepath.Join(m.Dir, "artifacts")
	})
	require.NoError(t, sampleBuild.err)
	return sampleBuild.artifacts
}

// k8sVersion is the k8s.io/apimachinery version of the workspace (v0.x.y).
func k8sVersion() (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "k8s.io/apimachinery")
	cmd.Dir = repoRoot()
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}

// sampleServer is the real sample-apiserver installed the way its README says (namespace
// wardle, service account apiserver and its RBAC, from the module's artifacts), running as a
// process with its own embedded etcd, a serving certificate for api.wardle.svc from a CA of its
// own, the service account's token as its kubeconfig, and an audit log of what it was asked and
// by whom.
type sampleServer struct {
	t        *testing.T
	port     int
	caBundle string
	audit    string
	args     []string
	proc     *process
}

// sampleExtraRBAC lets the server read what the artifacts' ClusterRole forgets: its admission
// plugins of 1.37 watch MutatingAdmissionPolicies too, and it is not ready until they synced (as
// on kube-apiserver).
const sampleExtraRBAC = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: wardle-mutating-admission-policies}
rules:
- apiGroups: [admissionregistration.k8s.io]
  resources: [mutatingadmissionpolicies, mutatingadmissionpolicybindings]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: wardle-mutating-admission-policies}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: wardle-mutating-admission-policies}
subjects: [{kind: ServiceAccount, name: apiserver, namespace: wardle}]
`

// startSampleAPIServer installs and starts the sample-apiserver against the API server at
// server (whose CA is caFile), as the admin of adminKubeconfig; it is not registered yet.
func startSampleAPIServer(t *testing.T, server, caFile, adminKubeconfig string) *sampleServer {
	t.Helper()
	caPEM, err := os.ReadFile(caFile)
	require.NoError(t, err)
	dir := t.TempDir()
	etcd, err := embedded.StartEtcd(context.Background(), t.TempDir(), freePort(t), freePort(t))
	require.NoError(t, err)
	t.Cleanup(etcd.Stop)
	s := &sampleServer{t: t, port: freePort(t), caBundle: installSample(t, dir, server, caPEM, adminKubeconfig), audit: filepath.Join(dir, "audit.log")}
	s.args = append(sampleArgs(dir), "--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(s.port), "--etcd-servers", etcd.Endpoints()[0],
		"--audit-policy-file", filepath.Join(dir, "audit-policy.yaml"), "--audit-log-path", s.audit)
	s.start()
	return s
}

// installSample installs the sample-apiserver's RBAC through adminKubeconfig (its artifacts,
// and sampleExtraRBAC) and writes into dir what it runs with: a kubeconfig for server (trusting
// caPEM) with its service account's token, a serving certificate for api.wardle.svc from a CA
// of its own, and an audit policy that records every request. It returns that CA, base64.
func installSample(t *testing.T, dir, server string, caPEM []byte, adminKubeconfig string) string {
	t.Helper()
	artifacts := buildSampleAPIServer(t)
	extra := filepath.Join(dir, "extra-rbac.yaml")
	writeFile(t, extra, sampleExtraRBAC)
	args := []string{"apply"}
	for _, f := range []string{"ns", "sa", "auth-delegator", "auth-reader", "rbac", "rbac-bind"} {
		args = append(args, "-f", filepath.Join(artifacts, "example", f+".yaml"))
	}
	out, err := kubectl(t, adminKubeconfig, append(args, "-f", extra)...)
	require.NoError(t, err, out)
	token, err := kubectl(t, adminKubeconfig, "create", "token", "apiserver", "-n", "wardle", "--duration=2h")
	require.NoError(t, err, token)
	writeFile(t, filepath.Join(dir, "kubeconfig"), fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q, certificate-authority-data: %s}}]
users: [{name: apiserver, user: {token: %q}}]
contexts: [{name: c, context: {cluster: c, user: apiserver}}]
current-context: c
`, server, base64.StdEncoding.EncodeToString(caPEM), strings.TrimSpace(token)))
	ca, err := certs.NewCA("wardle-ca", 2*time.Hour)
	require.NoError(t, err)
	certPEM, keyPEM, err := ca.IssueServing("api", []string{"api.wardle.svc"}, 2*time.Hour)
	require.NoError(t, err)
	writeFile(t, filepath.Join(dir, "serving.crt"), string(certPEM))
	writeFile(t, filepath.Join(dir, "serving.key"), string(keyPEM))
	writeFile(t, filepath.Join(dir, "audit-policy.yaml"), "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Metadata}]\n")
	return base64.StdEncoding.EncodeToString(ca.CertPEM)
}

// sampleArgs are the server's flags for what installSample wrote into dir (seen there as
// mounted, in a container).
func sampleArgs(dir string) []string {
	kubeconfig := filepath.Join(dir, "kubeconfig")
	return []string{"--tls-cert-file", filepath.Join(dir, "serving.crt"), "--tls-private-key-file", filepath.Join(dir, "serving.key"),
		"--kubeconfig", kubeconfig, "--authentication-kubeconfig", kubeconfig, "--authorization-kubeconfig", kubeconfig}
}

// start runs the server and waits until it is ready (its informers on the API server synced).
func (s *sampleServer) start() {
	s.t.Helper()
	s.proc = start(s.t, "sample-apiserver", s.args...)
	pem, err := base64.StdEncoding.DecodeString(s.caBundle)
	require.NoError(s.t, err)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "api.wardle.svc", MinVersion: tls.VersionTLS12}}}
	url := "https://127.0.0.1:" + strconv.Itoa(s.port) + "/readyz"
	require.Eventually(s.t, func() bool {
		code, _, _ := doGet(s.t, hc, url)
		return code == http.StatusOK
	}, 90*time.Second, 100*time.Millisecond, "the sample-apiserver never became ready")
}

// registration is what registers the server with an API server: a headless Service in wardle
// whose EndpointSlice leads to it on loopback, and APIServices for both versions it serves,
// trusting its CA.
func (s *sampleServer) registration() string {
	return loopbackService("wardle", "api", s.port, true) + s.apiServices(443)
}

// externalNameRegistration registers the server through an ExternalName Service naming
// localhost, with its port in the APIServices: how kube-apiserver reaches a server on its own
// loopback (its EndpointSlices may not name loopback, and it resolves no name under localhost).
func (s *sampleServer) externalNameRegistration() string {
	return "apiVersion: v1\nkind: Service\nmetadata: {name: api, namespace: wardle}\nspec: {type: ExternalName, externalName: localhost}\n" +
		s.apiServices(s.port)
}

// apiServices are the APIServices of both versions the server serves (its artifacts'
// priorities) behind the Service wardle/api on port.
func (s *sampleServer) apiServices(port int) string {
	var b strings.Builder
	for _, v := range []struct {
		version  string
		priority int
	}{{"v1alpha1", 15}, {"v1beta1", 10}} {
		fmt.Fprintf(&b, `---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: %[1]s.wardle.example.com}
spec: {group: wardle.example.com, version: %[1]s, service: {namespace: wardle, name: api, port: %[4]d}, caBundle: %[2]s, groupPriorityMinimum: 1000, versionPriority: %[3]d}
`, v.version, s.caBundle, v.priority, port)
	}
	return b.String()
}

// auditedUser is the user (name and groups) the server's audit log records for the last
// request whose URI contains uri and whose verb is verb.
func (s *sampleServer) auditedUser(verb, uri string) (string, []string, error) {
	f, err := os.Open(s.audit)
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	var name string
	var groups []string
	found := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ev struct {
			Verb       string `json:"verb"`
			RequestURI string `json:"requestURI"`
			Stage      string `json:"stage"`
			User       struct {
				Username string   `json:"username"`
				Groups   []string `json:"groups"`
			} `json:"user"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Verb != verb || !strings.Contains(ev.RequestURI, uri) {
			continue
		}
		name, groups, found = ev.User.Username, ev.User.Groups, true
	}
	if !found {
		return "", nil, errors.New("no audit event for " + verb + " " + uri)
	}
	return name, groups, nil
}

// The real sample-apiserver, registered as an APIService with default flags, is driven by an
// unmodified kubectl through the gateway: create, get, list, watch and delete flunders. It sees
// the caller (not the aggregator, not what the client claims) through the front-proxy headers.
// Killed, its APIService turns Available False within 30 s while core and CRDs go on; restarted,
// it comes back with its flunders.
func TestSampleAPIServer(t *testing.T) {
	c, _ := startAllInOne(t)
	admin := kc{t: t, kubeconfig: filepath.Join(c.dataDir(), "admin.kubeconfig")}
	s := startSampleAPIServer(t, c.base, filepath.Join(c.dataDir(), "pki", "ca.crt"), admin.kubeconfig)
	dir := t.TempDir()
	applyFile := func(k kc, name, content string) string {
		path := filepath.Join(dir, name)
		writeFile(t, path, content)
		return k.run("apply", "-f", path)
	}
	applyFile(admin, "registration.yaml", s.registration())
	available := func(name string) string {
		out, _ := kubectl(t, admin.kubeconfig, "get", "apiservice", name, "-o", `jsonpath={.status.conditions[?(@.type=="Available")].status}`)
		return out
	}
	for _, name := range []string{"v1alpha1.wardle.example.com", "v1beta1.wardle.example.com"} {
		require.Eventually(t, func() bool { return available(name) == "True" }, 30*time.Second, 200*time.Millisecond, name)
	}

	// The upstream example flunder, through kubectl's discovery of the group.
	example := filepath.Join(buildSampleAPIServer(t), "flunders", "01-flunder.yaml")
	eventuallyKubectl(t, admin.kubeconfig, "flunder.wardle.example.com/my-first-flunder created", "apply", "-n", "default", "-f", example)
	assert.Regexp(t, `(?m)^true$`, admin.run("get", "flunder", "my-first-flunder", "-n", "default", "-o", "jsonpath={.metadata.labels.sample-label}"))
	assert.Regexp(t, `(?m)^default\s+my-first-flunder\s+\S+$`, admin.run("get", "flunders", "-A", "--no-headers"))
	waitLine := kubectlWatch(t, admin.kubeconfig, "get", "flunders", "-n", "default", "-w", "--output-watch-events")
	waitLine("ADDED", "my-first-flunder")
	assert.Contains(t, admin.run("delete", "flunder", "my-first-flunder", "-n", "default"), `flunder.wardle.example.com "my-first-flunder" deleted`)
	waitLine("DELETED", "my-first-flunder")
	admin.fails("get", "flunder", "my-first-flunder", "-n", "default")

	// A service account bound to edit flunders creates one: the server's audit log has it,
	// with its groups, as the front-proxy headers said.
	admin.run("create", "serviceaccount", "alice", "-n", "default")
	admin.run("create", "role", "flunder-editor", "-n", "default", "--verb=*", "--resource=flunders.wardle.example.com")
	admin.run("create", "rolebinding", "alice-flunders", "-n", "default", "--role=flunder-editor", "--serviceaccount=default:alice")
	token := strings.TrimSpace(admin.run("create", "token", "alice", "-n", "default"))
	alice := kc{t: t, kubeconfig: tokenKubeconfig(t, c, token)}
	const aliceName = "system:serviceaccount:default:alice"
	eventuallyKubectl(t, alice.kubeconfig, "created", "create", "-n", "default", "-f", example)
	name, groups, err := s.auditedUser("create", "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders")
	require.NoError(t, err)
	assert.Equal(t, aliceName, name)
	assert.Subset(t, groups, []string{"system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"})

	// What a client says about itself in front-proxy headers is not passed on: the server
	// sees alice, and a request alice may not make is refused for alice.
	forged := func(method, path string) int {
		req, err := http.NewRequest(method, c.base+path, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("X-Remote-User", "kubernetes-admin")
		req.Header.Set("X-Remote-Group", "system:masters")
		resp, err := c.anonymous().Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusOK, forged(http.MethodGet, "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders/my-first-flunder?forged=1"))
	name, groups, err = s.auditedUser("get", "forged=1")
	require.NoError(t, err)
	assert.Equal(t, aliceName, name)
	assert.NotContains(t, groups, "system:masters")
	assert.Equal(t, http.StatusForbidden, forged(http.MethodDelete, "/apis/wardle.example.com/v1alpha1/namespaces/kube-system/flunders/x"))

	// Killed: Available turns False within 30 s without a request asking; the rest of the
	// API goes on, and its group's requests fail at once, naming it.
	s.proc.kill()
	killed := time.Now()
	require.Eventually(t, func() bool { return available("v1alpha1.wardle.example.com") == "False" }, 30*time.Second, 200*time.Millisecond)
	t.Logf("Available False %s after the kill", time.Since(killed).Round(time.Millisecond))
	admin.run("create", "configmap", "still-here", "-n", "default", "--from-literal=a=b")
	assert.Contains(t, admin.run("get", "configmaps", "-n", "default"), "still-here")
	applyFile(admin, "crd.yaml", gizmoCRD)
	admin.run("wait", "--for=condition=Established", "--timeout=20s", "crd/gizmos.stable.example.com")
	admin.run("create", "namespace", "crdsuite")
	writeFile(t, filepath.Join(dir, "g1.yaml"), gizmo("g1", "{color: blue}"))
	eventuallyKubectl(t, admin.kubeconfig, "gizmo.stable.example.com/g1 created", "apply", "-f", filepath.Join(dir, "g1.yaml"))
	assert.Contains(t, admin.run("api-resources"), "gizmos")
	// Deleting a namespace deletes its content, custom resources too, and is not held by the
	// group that does not answer.
	assert.Contains(t, admin.run("delete", "namespace", "crdsuite", "--timeout=30s"), `namespace "crdsuite" deleted`)
	assert.Contains(t, admin.run("get", "--raw", "/apis/stable.example.com/v1/gizmos"), `"items":[]`)
	start := time.Now()
	// kubectl leaves the stale group out, as it does on kube, but says why.
	out := admin.fails("get", "flunders", "-n", "default")
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.Contains(t, out, "Warning: APIService v1alpha1.wardle.example.com is not available (FailedDiscoveryCheck: ")
	assert.Contains(t, out, `error: the server doesn't have a resource type "flunders"`)
	code, body, _ := c.get("/apis/wardle.example.com/v1alpha1/namespaces/default/flunders")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "APIService v1alpha1.wardle.example.com is not available (FailedDiscoveryCheck: ")

	// Restarted: available again, with what it stored.
	s.start()
	require.Eventually(t, func() bool { return available("v1alpha1.wardle.example.com") == "True" }, 30*time.Second, 200*time.Millisecond)
	eventuallyKubectl(t, admin.kubeconfig, "flunder.wardle.example.com/my-first-flunder", "get", "flunders", "-n", "default", "-o", "name")
}
