package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// kc runs kubectl against the server and fails the test on error.
type kc struct {
	t          *testing.T
	kubeconfig string
}

func (k kc) run(args ...string) string {
	k.t.Helper()
	out, err := kubectl(k.t, k.kubeconfig, args...)
	require.NoError(k.t, err, "kubectl %s:\n%s", strings.Join(args, " "), out)
	return out
}

func (k kc) fails(args ...string) string {
	k.t.Helper()
	out, err := kubectl(k.t, k.kubeconfig, args...)
	require.Error(k.t, err, "kubectl %s should fail:\n%s", strings.Join(args, " "), out)
	return out
}

// An unmodified kubectl drives the core resources through the gateway.
func TestKubectlCoreResources(t *testing.T) {
	c, _ := startAllInOne(t)
	k := kc{t: t, kubeconfig: filepath.Join(c.data, "admin.kubeconfig")}

	out := k.run("get", "ns")
	for _, ns := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
		assert.Contains(t, out, ns)
	}
	out = k.run("api-resources")
	for _, want := range []string{"configmaps", "cm", "namespaces", "deployments", "leases"} {
		assert.Contains(t, out, want)
	}

	k.run("create", "namespace", "demo")
	k.run("create", "configmap", "c1", "-n", "demo", "--from-literal=a=b")
	k.run("create", "secret", "generic", "s1", "-n", "demo", "--from-literal=p=q")
	out = k.run("get", "cm", "-n", "demo")
	assert.Regexp(t, `(?m)^NAME\s+DATA\s+AGE$`, out)
	assert.Regexp(t, `(?m)^c1\s+1\s+\d+s$`, out)
	out = k.run("get", "secret", "s1", "-n", "demo", "-o", "wide")
	assert.Regexp(t, `s1\s+Opaque\s+1`, out)
	out = k.run("get", "cm", "c1", "-n", "demo", "-o", "yaml")
	assert.Contains(t, out, "kind: ConfigMap")
	assert.Regexp(t, `resourceVersion: "\d+"`, out)
	assert.Regexp(t, `uid: [0-9a-f-]{36}`, out)
	out = k.run("get", "cm", "c1", "-n", "demo", "-o", "json")
	assert.Contains(t, out, `"kind": "ConfigMap"`)
	out = k.run("get", "cm", "c1", "-n", "demo", "-o", "jsonpath={.data.a}")
	assert.Equal(t, "b", out)

	// Creating an existing name is a 409 AlreadyExists; in a missing namespace a 404.
	out = k.fails("create", "configmap", "c1", "-n", "demo", "--from-literal=a=b")
	assert.Contains(t, out, `configmaps "c1" already exists`)
	out = k.fails("create", "configmap", "c1", "-n", "nowhere", "--from-literal=a=b")
	assert.Contains(t, out, `namespaces "nowhere" not found`)
	out = k.fails("create", "configmap", "Bad_Name", "-n", "demo")
	assert.Contains(t, out, "a lowercase RFC 1123 subdomain")

	// Patches of every kind, labels and annotations.
	k.run("patch", "cm", "c1", "-n", "demo", "--type=merge", "-p", `{"data":{"m":"1"}}`)
	k.run("patch", "cm", "c1", "-n", "demo", "--type=json", "-p", `[{"op":"add","path":"/data/j","value":"2"}]`)
	k.run("patch", "cm", "c1", "-n", "demo", "-p", `{"data":{"s":"3"}}`)
	k.run("label", "cm", "c1", "-n", "demo", "tier=web")
	k.run("annotate", "cm", "c1", "-n", "demo", "note=hi")
	out = k.run("get", "cm", "-n", "demo", "-l", "tier=web", "-o", "jsonpath={.items[*].data}")
	assert.JSONEq(t, `{"a":"b","j":"2","m":"1","s":"3"}`, out)
	out = k.run("get", "cm", "-n", "demo", "--field-selector", "metadata.name=c1", "-o", "name")
	assert.Equal(t, "configmap/c1\n", out)

	// Client-side apply twice with a change, server-side apply with conflicts, edit, explain.
	dir := t.TempDir()
	manifest := filepath.Join(dir, "cm.yaml")
	writeManifest := func(value string) {
		require.NoError(t, os.WriteFile(manifest, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\n  namespace: demo\ndata:\n  key: "+value+"\n"), 0o600))
	}
	writeManifest("one")
	assert.Contains(t, k.run("apply", "-f", manifest), "configmap/applied created")
	writeManifest("two")
	assert.Contains(t, k.run("apply", "-f", manifest), "configmap/applied configured")
	assert.Equal(t, "two", k.run("get", "cm", "applied", "-n", "demo", "-o", "jsonpath={.data.key}"))
	writeManifest("three")
	assert.Contains(t, k.run("apply", "--server-side", "-f", manifest), "serverside-applied")
	k.run("patch", "cm", "applied", "-n", "demo", "--field-manager=intruder", "-p", `{"data":{"key":"other"}}`)
	out = k.fails("apply", "--server-side", "-f", manifest)
	assert.Contains(t, out, `conflict with "intruder"`)
	k.run("apply", "--server-side", "--force-conflicts", "-f", manifest)
	assert.Equal(t, "three", k.run("get", "cm", "applied", "-n", "demo", "-o", "jsonpath={.data.key}"))
	out = k.run("get", "cm", "applied", "-n", "demo", "-o", "yaml", "--show-managed-fields")
	assert.Contains(t, out, "manager: kubectl")
	assert.Contains(t, out, "operation: Apply")

	editor := filepath.Join(dir, "editor.sh")
	require.NoError(t, os.WriteFile(editor, []byte("#!/bin/sh\nsed -i 's/key: three/key: edited/' \"$1\"\n"), 0o700))
	out, err := kubectlEnv(t, []string{"EDITOR=" + editor}, k.kubeconfig, "edit", "cm", "applied", "-n", "demo")
	require.NoError(t, err, out)
	assert.Equal(t, "edited", k.run("get", "cm", "applied", "-n", "demo", "-o", "jsonpath={.data.key}"))
	out = k.run("explain", "configmap.data")
	assert.Contains(t, out, "Data contains the configuration data")

	// Workloads print kube's columns and scale through the scale subresource.
	k.run("create", "deployment", "web", "-n", "demo", "--image=registry.example/web:1", "--replicas=2")
	out = k.run("get", "deploy", "-n", "demo")
	assert.Regexp(t, `(?m)^NAME\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+AGE$`, out)
	assert.Regexp(t, `(?m)^web\s+0/2\s+0\s+0\s+`, out)
	k.run("scale", "deployment", "web", "-n", "demo", "--replicas=3")
	assert.Equal(t, "3", k.run("get", "deploy", "web", "-n", "demo", "-o", "jsonpath={.spec.replicas}"))
	assert.Equal(t, "2", k.run("get", "deploy", "web", "-n", "demo", "-o", "jsonpath={.metadata.generation}"))

	// Unknown fields: a warning by default (fieldValidation=Warn), an error with Strict.
	loose := filepath.Join(dir, "loose.yaml")
	require.NoError(t, os.WriteFile(loose, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: loose\n  namespace: demo\nbogus: 1\n"), 0o600))
	out = k.run("create", "--validate=warn", "-f", loose)
	assert.Contains(t, out, `Warning: unknown field "bogus"`)
	out = k.fails("create", "--validate=strict", "-f", loose)
	assert.Contains(t, out, `unknown field "bogus"`)
	out = k.run("patch", "cm", "c1", "-n", "demo", "--type=merge", "-p", `{"bogus":1}`)
	assert.Contains(t, out, `Warning: unknown field "bogus"`)

	// Immutable configmaps refuse data changes.
	k.run("create", "configmap", "frozen", "-n", "demo", "--from-literal=a=b")
	k.run("patch", "cm", "frozen", "-n", "demo", "--type=merge", "-p", `{"immutable":true}`)
	out = k.fails("patch", "cm", "frozen", "-n", "demo", "--type=merge", "-p", `{"data":{"a":"c"}}`)
	assert.Contains(t, out, "field is immutable when `immutable` is set")

	// get -w sees live events.
	waitLine := kubectlWatch(t, k.kubeconfig, "get", "cm", "-n", "demo", "-w", "--output-watch-events")
	waitLine("ADDED", "c1") // the initial list
	k.run("create", "configmap", "live", "-n", "demo", "--from-literal=a=1")
	waitLine("ADDED", "live")
	k.run("patch", "cm", "live", "-n", "demo", "-p", `{"data":{"b":"2"}}`)
	waitLine("MODIFIED", "live", "2")
	k.run("delete", "cm", "live", "-n", "demo")
	waitLine("DELETED", "live")

	// Who am I and what may I do, answered by the gateway that authenticated the request.
	out = k.run("auth", "whoami")
	assert.Regexp(t, `Username\s+kubernetes-admin`, out)
	assert.Contains(t, out, "system:masters")
	assert.Equal(t, "yes\n", k.run("auth", "can-i", "create", "configmaps", "-n", "demo"))

	// Deleting a namespace deletes its content, then the namespace.
	k.run("delete", "namespace", "demo", "--wait=false")
	k.run("wait", "--for=delete", "namespace/demo", "--timeout=30s")
	out = k.run("get", "cm", "-A")
	assert.NotContains(t, out, "c1")
	k.fails("get", "ns", "demo")
}

// waitEstablished waits for a CRD's Established condition with kubectl wait, which fails
// instead of waiting while the new CRD's status.conditions is still null (as on kube, whose
// create response has "conditions": null too); flags go before the subcommand (--server).
func waitEstablished(t testing.TB, kubeconfig, crd string, flags ...string) {
	t.Helper()
	args := append(flags, "wait", "--for=condition=Established", "--timeout=30s", "crd/"+crd)
	var out string
	require.Eventually(t, func() bool {
		var err error
		out, err = kubectl(t, kubeconfig, args...)
		return err == nil
	}, time.Minute, 50*time.Millisecond, "kubectl %s:\n%s", strings.Join(args, " "), &out)
}
