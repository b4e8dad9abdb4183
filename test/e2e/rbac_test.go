package e2e

import (
	"crypto/tls"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apichain/apichain/pkg/certs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
)

// kubectl manages RBAC objects as on kube: the create helpers, kube's columns, and kube's
// validation messages.
func TestKubectlRBACObjects(t *testing.T) {
	c, _ := startAllInOne(t)
	k := kc{t: t, kubeconfig: filepath.Join(c.data, "admin.kubeconfig")}

	out := k.run("api-resources", "--api-group=rbac.authorization.k8s.io")
	for _, r := range []string{"clusterrolebindings", "clusterroles", "rolebindings", "roles"} {
		assert.Contains(t, out, r)
	}
	k.run("create", "namespace", "team")
	k.run("create", "role", "pod-reader", "-n", "team", "--verb=get,list,watch", "--resource=pods")
	k.run("create", "rolebinding", "read-pods", "-n", "team", "--role=pod-reader", "--user=bob",
		"--group=devs", "--serviceaccount=team:default")
	k.run("create", "clusterrole", "system:node-reader", "--verb=get", "--resource=nodes", "--non-resource-url=/metrics/*")
	// --verb=get with a non-resource URL makes two rules, as kubectl does.
	k.run("create", "clusterrolebinding", "read-nodes", "--clusterrole=system:node-reader", "--serviceaccount=team:default")

	out = k.run("get", "roles", "-n", "team")
	assert.Regexp(t, `(?m)^NAME\s+CREATED AT$`, out)
	assert.Regexp(t, `(?m)^pod-reader\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`, out)
	out = k.run("get", "rolebindings", "-n", "team", "-o", "wide")
	assert.Regexp(t, `(?m)^NAME\s+ROLE\s+AGE\s+USERS\s+GROUPS\s+SERVICEACCOUNTS$`, out)
	assert.Regexp(t, `(?m)^read-pods\s+Role/pod-reader\s+\d+s\s+bob\s+devs\s+team/default$`, out)
	out = k.run("get", "clusterrolebinding", "read-nodes")
	assert.Regexp(t, `(?m)^read-nodes\s+ClusterRole/system:node-reader\s+\d+s$`, out)
	out = k.run("get", "clusterrole", "system:node-reader", "-o", "jsonpath={.rules[*].nonResourceURLs}")
	assert.Contains(t, out, "/metrics/*")

	// kube's validation, as kubectl prints it.
	out = k.fails("patch", "rolebinding", "read-pods", "-n", "team", "--type=merge", "-p", `{"roleRef":{"name":"other"}}`)
	assert.Contains(t, out, "cannot change roleRef")
	bad := filepath.Join(t.TempDir(), "bad-role.yaml")
	writeFile(t, bad, `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: bad, namespace: team}
rules:
- verbs: [get]
  nonResourceURLs: [/healthz]
`)
	out = k.fails("create", "-f", bad)
	assert.Contains(t, out, "namespaced rules cannot apply to non-resource URLs")
	out = k.fails("create", "rolebinding", "to-nothing", "-n", "team", "--clusterrole=a/b", "--user=x")
	assert.Contains(t, out, `roleRef.name: Invalid value: "a/b": may not contain '/'`)
	k.run("delete", "rolebinding", "read-pods", "-n", "team")
	out = k.run("get", "rolebindings", "-n", "team")
	assert.Contains(t, out, "No resources found")
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// tokenKubeconfig writes a kubeconfig for the admin's server that authenticates with token.
func tokenKubeconfig(t *testing.T, c *client, token string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(filepath.Join(c.data, "admin.kubeconfig"))
	require.NoError(t, err)
	for _, a := range cfg.AuthInfos {
		a.ClientCertificateData, a.ClientKeyData, a.Token = nil, nil, token
	}
	path := filepath.Join(t.TempDir(), "token.kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*cfg, path))
	return path
}

// With --authorization-mode=RBAC the gateway decides from roles and bindings it watches
// through core: a token user is denied, allowed once bound, and denied again once the binding
// is gone; kubectl auth can-i answers from the same rules.
func TestRBACAuthorization(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	require.NoError(t, os.WriteFile(tokens, []byte("bob-token,bob,1002\n"), 0o600))
	c, _ := startAllInOne(t, "--authorization-mode=RBAC", "--token-auth-file", tokens)
	admin := kc{t: t, kubeconfig: filepath.Join(c.data, "admin.kubeconfig")}
	bob := kc{t: t, kubeconfig: tokenKubeconfig(t, c, "bob-token")}

	assert.Contains(t, admin.run("get", "--raw", "/readyz?verbose"), "[+]poststarthook/start-rbac-authorizer ok")
	admin.run("create", "namespace", "team")
	// What kube's system:basic-user gives every authenticated user: asking what they may do.
	admin.run("create", "clusterrole", "reviews", "--verb=create",
		"--resource=selfsubjectaccessreviews.authorization.k8s.io,selfsubjectrulesreviews.authorization.k8s.io")
	admin.run("create", "clusterrolebinding", "reviews", "--clusterrole=reviews", "--group=system:authenticated")

	denied := `configmaps is forbidden: User "bob" cannot list resource "configmaps" in API group "" in the namespace "team"`
	out := bob.fails("get", "--raw", "/api/v1/namespaces/team/configmaps")
	assert.Contains(t, out, denied)
	assert.Eventually(t, func() bool {
		out, _ := kubectl(t, bob.kubeconfig, "auth", "can-i", "list", "configmaps", "-n", "team")
		return strings.TrimSpace(out) == "no"
	}, 10*time.Second, 20*time.Millisecond)

	admin.run("create", "role", "cm-reader", "-n", "team", "--verb=get,list", "--resource=configmaps")
	admin.run("create", "rolebinding", "bob-reads", "-n", "team", "--role=cm-reader", "--user=bob")
	require.Eventually(t, func() bool {
		_, err := kubectl(t, bob.kubeconfig, "get", "--raw", "/api/v1/namespaces/team/configmaps")
		return err == nil
	}, 5*time.Second, 10*time.Millisecond, "the binding takes effect")
	assert.Equal(t, "yes", strings.TrimSpace(bob.run("auth", "can-i", "list", "configmaps", "-n", "team")))
	out = bob.fails("auth", "can-i", "delete", "configmaps", "-n", "team")
	assert.Equal(t, "no", strings.TrimSpace(out))
	out = bob.run("auth", "can-i", "--list", "-n", "team")
	assert.Regexp(t, `(?m)^configmaps\s+\[\]\s+\[\]\s+\[get list\]$`, out)
	out = bob.fails("get", "--raw", "/api/v1/namespaces/default/configmaps")
	assert.Contains(t, out, `in the namespace "default"`, "only in the binding's namespace")

	admin.run("delete", "rolebinding", "bob-reads", "-n", "team")
	require.Eventually(t, func() bool {
		out, err := kubectl(t, bob.kubeconfig, "get", "--raw", "/api/v1/namespaces/team/configmaps")
		return err != nil && strings.Contains(out, denied)
	}, 5*time.Second, 10*time.Millisecond, "the deleted binding stops applying")

	// Escalation prevention: bob may manage roles and bindings in team, but grant only what
	// he holds himself.
	admin.run("create", "role", "rbac-manager", "-n", "team", "--verb=create,get,list",
		"--resource=roles.rbac.authorization.k8s.io,rolebindings.rbac.authorization.k8s.io,configmaps")
	admin.run("create", "rolebinding", "bob-manages", "-n", "team", "--role=rbac-manager", "--user=bob")
	require.Eventually(t, func() bool {
		_, err := kubectl(t, bob.kubeconfig, "create", "role", "cm-getter", "-n", "team", "--verb=get", "--resource=configmaps")
		return err == nil
	}, 5*time.Second, 20*time.Millisecond, "a role within bob's own rights")
	out = bob.fails("create", "role", "secret-getter", "-n", "team", "--verb=get,list", "--resource=secrets")
	assert.Contains(t, out, `roles.rbac.authorization.k8s.io "secret-getter" is forbidden: user "bob" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:`)
	assert.Contains(t, out, `{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}`)
	bob.run("create", "rolebinding", "carol-gets", "-n", "team", "--role=cm-getter", "--user=carol")
	admin.run("create", "clusterrole", "secret-admin", "--verb=*", "--resource=secrets")
	out = bob.fails("create", "rolebinding", "carol-secrets", "-n", "team", "--clusterrole=secret-admin", "--user=carol")
	assert.Contains(t, out, `rolebindings.rbac.authorization.k8s.io "carol-secrets" is forbidden: user "bob"`)
	// Binding a role whose rules bob holds (the reviews every authenticated user has) is fine.
	bob.run("create", "rolebinding", "carol-reviews", "-n", "team", "--clusterrole=reviews", "--user=carol")
	// With the bind verb on that role, bob may bind it although he does not hold it.
	admin.run("create", "role", "binder", "-n", "team", "--verb=bind", "--resource=clusterroles.rbac.authorization.k8s.io", "--resource-name=secret-admin")
	admin.run("create", "rolebinding", "bob-binds", "-n", "team", "--role=binder", "--user=bob")
	require.Eventually(t, func() bool {
		_, err := kubectl(t, bob.kubeconfig, "create", "rolebinding", "carol-secrets", "-n", "team", "--clusterrole=secret-admin", "--user=carol")
		return err == nil
	}, 5*time.Second, 20*time.Millisecond, "bind allows what bob does not hold")
}

// A client certificate from a CA the gateway does not trust completes the TLS handshake and
// gets kube's 401 Status, as on kube-apiserver (not a handshake failure, and never anonymous).
func TestUntrustedClientCertificateIs401(t *testing.T) {
	c, _ := startAllInOne(t)
	other, err := certs.EnsurePKI(t.TempDir(), nil, nil)
	require.NoError(t, err)
	cert, err := tls.LoadX509KeyPair(other.AdminCertFile, other.AdminKeyFile)
	require.NoError(t, err)
	hc := c.anonymous()
	hc.Transport.(*http.Transport).TLSClientConfig.Certificates = []tls.Certificate{cert}
	for _, path := range []string{"/readyz", "/api/v1/namespaces"} {
		resp, err := hc.Get(c.base + path)
		require.NoError(t, err, "the handshake completes")
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, path)
		assert.JSONEq(t, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`, string(body))
	}
}

// Core creates kube's default roles and bindings at start (rbac/bootstrap-roles), and its
// aggregation controller fills admin, edit and view from the roles labelled for them,
// including a user's.
func TestBootstrapPolicyAndAggregation(t *testing.T) {
	c, _ := startAllInOne(t)
	k := kc{t: t, kubeconfig: filepath.Join(c.data, "admin.kubeconfig")}
	assert.Contains(t, k.run("get", "--raw", "/readyz?verbose"), "[+]core/poststarthook/rbac/bootstrap-roles ok")
	out := k.run("get", "clusterrolebinding", "cluster-admin", "system:public-info-viewer", "-o", "wide")
	assert.Regexp(t, `(?m)^cluster-admin\s+ClusterRole/cluster-admin\s+\S+\s+system:masters`, out)
	assert.Regexp(t, `(?m)^system:public-info-viewer\s+ClusterRole/system:public-info-viewer\s+\S+\s+system:authenticated, system:unauthenticated`, out)
	out = k.run("get", "role", "-n", "kube-system", "extension-apiserver-authentication-reader", "-o", "jsonpath={.metadata.labels}")
	assert.Contains(t, out, `"kubernetes.io/bootstrapping":"rbac-defaults"`)

	viewRules := func() string {
		out, _ := kubectl(t, k.kubeconfig, "get", "clusterrole", "view", "-o", "jsonpath={.rules[*].resources}")
		return out
	}
	require.Eventually(t, func() bool { return strings.Contains(viewRules(), "configmaps") }, 10*time.Second, 20*time.Millisecond,
		"view aggregates system:aggregate-to-view")
	widgets := filepath.Join(t.TempDir(), "widgets-view.yaml")
	writeFile(t, widgets, `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: widgets-view
  labels: {rbac.authorization.k8s.io/aggregate-to-view: "true"}
rules:
- {apiGroups: [example.com], resources: [widgets], verbs: [get, list]}
`)
	k.run("create", "-f", widgets)
	require.Eventually(t, func() bool { return strings.Contains(viewRules(), "widgets") }, 10*time.Second, 20*time.Millisecond,
		"view picks up a labelled role")
	k.run("delete", "clusterrole", "widgets-view")
	require.Eventually(t, func() bool { return !strings.Contains(viewRules(), "widgets") }, 10*time.Second, 20*time.Millisecond,
		"and lets it go")
}

// With --anonymous-auth=false a request without credentials is 401 everywhere, health
// included, as on kube.
func TestAnonymousAuthDisabled(t *testing.T) {
	c, _ := startAllInOne(t, "--anonymous-auth=false")
	for _, path := range []string{"/readyz", "/version", "/api"} {
		code, body, _ := doGet(t, c.anonymous(), c.base+path)
		assert.Equal(t, http.StatusUnauthorized, code, "%s: %s", path, body)
	}
}

// kubectl --as and --as-group: an authorized user acts as another, RBAC then decides for
// the impersonated user, and kubectl auth can-i --as answers for them; a user without the
// impersonate verb gets kube's 403.
func TestImpersonation(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	require.NoError(t, os.WriteFile(tokens, []byte("bob-token,bob,1002\n"), 0o600))
	c, _ := startAllInOne(t, "--token-auth-file", tokens)
	admin := kc{t: t, kubeconfig: filepath.Join(c.data, "admin.kubeconfig")}
	bob := kc{t: t, kubeconfig: tokenKubeconfig(t, c, "bob-token")}
	admin.run("create", "namespace", "team")

	// Given groups, and system:authenticated as kube-apiserver 1.37.2 adds it (recorded there:
	// kubectl auth whoami --as=bob --as-group=devs); system:unauthenticated keeps it out.
	out := admin.run("auth", "whoami", "--as", "bob", "--as-group", "devs",
		"-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}")
	assert.Equal(t, `bob ["devs","system:authenticated"]`, out)
	out = admin.fails("auth", "whoami", "--as", "bob", "--as-group", "system:unauthenticated")
	assert.Contains(t, out, "not enabled in the cluster or you do not have permission")
	out = admin.run("auth", "whoami", "--as", "system:serviceaccount:team:ci", "-o", "jsonpath={.status.userInfo.groups}")
	assert.Equal(t, `["system:serviceaccounts","system:serviceaccounts:team","system:authenticated"]`, out)

	out = admin.fails("get", "configmaps", "-n", "team", "--as", "bob")
	assert.Contains(t, out, `User "bob" cannot list resource "configmaps" in API group "" in the namespace "team"`)
	out, _ = kubectl(t, admin.kubeconfig, "auth", "can-i", "list", "configmaps", "-n", "team", "--as", "bob")
	assert.Equal(t, "no", strings.TrimSpace(out))
	admin.run("create", "rolebinding", "bob-views", "-n", "team", "--clusterrole=view", "--user=bob")
	require.Eventually(t, func() bool {
		out, _ := kubectl(t, admin.kubeconfig, "auth", "can-i", "list", "configmaps", "-n", "team", "--as", "bob")
		return strings.TrimSpace(out) == "yes"
	}, 5*time.Second, 20*time.Millisecond)
	admin.run("get", "configmaps", "-n", "team", "--as", "bob")

	out = bob.fails("get", "configmaps", "-n", "team", "--as", "admin")
	assert.Contains(t, out, `configmaps is forbidden: User "bob" cannot impersonate-on:user-info:list resource "configmaps" in API group "" in the namespace "team"`)
}
