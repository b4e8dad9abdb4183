package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
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

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
