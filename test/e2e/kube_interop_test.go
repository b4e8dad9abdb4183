package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// kubeReferenceDir is the kube-reference tools' directory (KUBE_REFERENCE, else the one beside
// the repository), skipping the test loudly when kube-apiserver and etcd are not built there.
func kubeReferenceDir(t *testing.T) string {
	dir := os.Getenv("KUBE_REFERENCE")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "shared", "tools", "kube-reference")
	}
	dir, err := filepath.Abs(dir)
	require.NoError(t, err)
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, "bin", b)); err != nil {
			t.Skipf("*** SKIPPED: %s is not built in %s/bin (build it with %s/build/build.sh and etcd/build.sh, ~15 minutes): "+
				"the interoperability with kube-apiserver 1.37.2 is not checked ***", b, dir, dir)
		}
	}
	return dir
}

// interopKinds are the kinds TestKubeInterop compares, as kubectl names them.
const interopKinds = "namespaces,serviceaccounts,configmaps,secrets,pods,services,deployments.apps,cronjobs.batch," +
	"horizontalpodautoscalers.autoscaling,ingresses.networking.k8s.io,poddisruptionbudgets.policy,roles,rolebindings," +
	"clusterroles,clusterrolebindings,priorityclasses,storageclasses,validatingwebhookconfigurations,mutatingwebhookconfigurations," +
	"customresourcedefinitions,apiservices,widgets.example.com"

// kube-apiserver 1.37.2 and apichain share one etcd: what kube wrote (objects of every kind
// group, a CRD with custom resources made in two versions, webhooks, an APIService) apichain
// reads back equal (UIDs, resourceVersions, managed fields, contents), and what apichain then
// writes kube reads back; with Secrets encrypted by the same configuration on both, and
// without encryption.
func TestKubeInterop(t *testing.T) {
	ref := kubeReferenceDir(t)
	for _, encrypted := range []bool{false, true} {
		t.Run(map[bool]string{false: "encryption off", true: "encryption on"}[encrypted], func(t *testing.T) {
			runInterop(t, ref, encrypted)
		})
	}
}

// kubeRun is one kube-apiserver (and its etcd) started by the kube-reference's run.sh.
type kubeRun struct {
	ref, dir           string
	etcdPort, kubePort int
	extra              string
}

func (k *kubeRun) start(t *testing.T, keepData bool) {
	t.Helper()
	cmd := exec.Command(filepath.Join(k.ref, "run.sh"))
	cmd.Env = append(os.Environ(), "RUN_DIR="+k.dir, "KUBE_PORT="+strconv.Itoa(k.kubePort), "ETCD_PORT="+strconv.Itoa(k.etcdPort),
		"KUBE_EXTRA_FLAGS="+k.extra, "KEEP_ETCD_DATA="+map[bool]string{true: "1", false: "0"}[keepData])
	out, err := cmd.CombinedOutput()
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(k.dir, "kube-apiserver.log"))
		t.Fatalf("run.sh: %v\n%s\n%s", err, out, log)
	}
}

func (k *kubeRun) stop() {
	cmd := exec.Command(filepath.Join(k.ref, "stop.sh"))
	cmd.Env = append(os.Environ(), "RUN_DIR="+k.dir)
	_ = cmd.Run()
}

// stopAPIServer stops kube-apiserver and leaves its etcd running.
func (k *kubeRun) stopAPIServer(t *testing.T) {
	t.Helper()
	pids, err := os.ReadFile(filepath.Join(k.dir, "pids"))
	require.NoError(t, err)
	lines := strings.Fields(string(pids))
	require.Len(t, lines, 2, "etcd's and kube-apiserver's")
	pid, err := strconv.Atoi(lines[1])
	require.NoError(t, err)
	p, err := os.FindProcess(pid)
	require.NoError(t, err)
	require.NoError(t, p.Signal(syscall.SIGTERM))
	require.Eventually(t, func() bool { return p.Signal(syscall.Signal(0)) != nil }, time.Minute, 100*time.Millisecond, "kube-apiserver stops")
}

func (k *kubeRun) kubeconfig() string { return filepath.Join(k.dir, "kubeconfig") }

// interopObjects reads every object of interopKinds as kubectl gets them, by kind/namespace/name.
func interopObjects(t *testing.T, kubeconfig string) map[string]*unstructured.Unstructured {
	t.Helper()
	cmd := exec.Command("kubectl", "--kubeconfig", kubeconfig, "get", interopKinds, "-A", "-o", "json", "--show-managed-fields")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	var list struct{ Items []json.RawMessage }
	require.NoError(t, json.Unmarshal(out, &list))
	if stderr.Len() > 0 {
		t.Logf("kubectl get: %s", stderr.String())
	}
	objs := map[string]*unstructured.Unstructured{}
	for _, raw := range list.Items {
		u := &unstructured.Unstructured{}
		require.NoError(t, u.UnmarshalJSON(raw))
		objs[u.GetKind()+" "+u.GetNamespace()+"/"+u.GetName()] = u
	}
	return objs
}

func runInterop(t *testing.T, ref string, encrypted bool) {
	k := &kubeRun{ref: ref, dir: t.TempDir(), etcdPort: freePort(t), kubePort: freePort(t)}
	t.Cleanup(k.stop)
	// The same configuration on both. Without encryption kube runs with none, and apichain
	// (whose all-in-one encrypts Secrets by default) with kube's way of saying none: identity
	// first.
	providers := "  - identity: {}\n"
	if encrypted {
		key := make([]byte, 32)
		_, err := rand.Read(key)
		require.NoError(t, err)
		providers = fmt.Sprintf("  - secretbox: {keys: [{name: shared, secret: %s}]}\n  - identity: {}\n", base64.StdEncoding.EncodeToString(key))
	}
	file := filepath.Join(t.TempDir(), "encryption.yaml")
	writeFile(t, file, "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n"+providers)
	apichainExtra := []string{"--encryption-provider-config", file}
	if encrypted {
		k.extra = "--encryption-provider-config=" + file
	}
	k.start(t, false)
	out, err := kubectl(t, k.kubeconfig(), "apply", "-f", filepath.Join("testdata", "kube-interop", "objects.yaml"))
	require.NoError(t, err, out)
	out, err = kubectl(t, k.kubeconfig(), "wait", "--for", "condition=Established", "crd/widgets.example.com", "--timeout", "60s")
	require.NoError(t, err, out)
	for _, v := range []string{"v1", "v2"} {
		manifest := filepath.Join(t.TempDir(), "widget.yaml")
		writeFile(t, manifest, fmt.Sprintf("apiVersion: example.com/%s\nkind: Widget\nmetadata: {name: made-as-%s, namespace: interop}\nspec: {size: 3}\n", v, v))
		out, err = kubectl(t, k.kubeconfig(), "apply", "-f", manifest)
		require.NoError(t, err, out)
	}
	fromKube := interopObjects(t, k.kubeconfig())
	require.Greater(t, len(fromKube), 40)
	k.stopAPIServer(t)

	etcd, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://127.0.0.1:" + strconv.Itoa(k.etcdPort)}, DialTimeout: 5 * time.Second})
	require.NoError(t, err)
	defer etcd.Close()
	if encrypted {
		resp, err := etcd.Get(context.Background(), "/registry/secrets/interop/db-password")
		require.NoError(t, err)
		require.Len(t, resp.Kvs, 1)
		assert.True(t, strings.HasPrefix(string(resp.Kvs[0].Value), "k8s:enc:secretbox:v1:shared:"), "kube encrypted it")
	}
	startRev := etcdRevision(t, etcd)
	kubeForms := storedForms(t, etcd)

	// apichain on kube's etcd.
	data := tempDataDir(t)
	p := start(t, "apichain", append([]string{"--data-dir", data, "--secure-port", "0", "--etcd-servers", "http://127.0.0.1:" + strconv.Itoa(k.etcdPort)}, apichainExtra...)...)
	c := waitKubeconfig(t, filepath.Join(data, "admin.kubeconfig"))
	c.waitReady(90 * time.Second)
	apichainKubeconfig := filepath.Join(data, "admin.kubeconfig")
	fromApichain := interopObjects(t, apichainKubeconfig)
	var rewritten []string
	for name, want := range fromKube {
		got, ok := fromApichain[name]
		if !assert.True(t, ok, "%s, written by kube, is read by apichain", name) {
			continue
		}
		rv, _ := strconv.ParseInt(got.GetResourceVersion(), 10, 64)
		if rv <= startRev {
			assert.Equal(t, want.Object, got.Object, "%s: read back as kube served it", name)
			continue
		}
		// apichain's own controllers wrote it since (its bootstrap, a status): what kube wrote
		// is still there.
		rewritten = append(rewritten, name)
		assert.Equal(t, want.GetUID(), got.GetUID(), name)
		assert.Equal(t, want.GetCreationTimestamp(), got.GetCreationTimestamp(), name)
		for _, field := range []string{"spec", "data", "binaryData", "rules", "subjects", "roleRef", "webhooks"} {
			if field == "rules" && want.Object["aggregationRule"] != nil {
				continue // apichain's clusterrole-aggregation controller fills them (kube's is kube-controller-manager's, not running here)
			}
			assert.Equal(t, want.Object[field], got.Object[field], "%s: %s", name, field)
		}
	}
	t.Logf("%d objects read back as kube served them; rewritten by apichain's controllers since: %v", len(fromKube)-len(rewritten), rewritten)
	secret, err := kubectl(t, apichainKubeconfig, "get", "secret", "-n", "interop", "db-password", "-o", "jsonpath={.data.password}")
	require.NoError(t, err)
	plain, _ := base64.StdEncoding.DecodeString(secret)
	assert.Equal(t, "s3cr3t-written-by-kube", string(plain))

	// kube's node ports are apichain's to keep: asking for one kube gave is refused.
	kubePort := fromKube["Service interop/web-nodeport"].Object["spec"].(map[string]any)["ports"].([]any)[0].(map[string]any)["nodePort"]
	taken := filepath.Join(t.TempDir(), "taken.yaml")
	writeFile(t, taken, fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata: {name: same-port, namespace: interop}\n"+
		"spec: {type: NodePort, selector: {app: web}, ports: [{port: 80, nodePort: %v}]}\n", kubePort))
	require.Eventually(t, func() bool {
		out, err := kubectl(t, apichainKubeconfig, "create", "-f", taken)
		if err == nil {
			_, _ = kubectl(t, apichainKubeconfig, "delete", "-f", taken)
		}
		return err != nil && strings.Contains(out, "provided port is already allocated")
	}, 30*time.Second, 500*time.Millisecond, "node port %v, kube's service's, is not given again", kubePort)

	// apichain writes; kube reads.
	writes := filepath.Join(t.TempDir(), "writes.yaml")
	writeFile(t, writes, `apiVersion: v1
kind: ConfigMap
metadata: {name: from-apichain, namespace: interop}
data: {written: by-apichain}
---
apiVersion: v1
kind: Secret
metadata: {name: from-apichain, namespace: interop}
stringData: {token: apichain-secret}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: from-apichain, namespace: interop}
spec:
  replicas: 1
  selector: {matchLabels: {app: apichain}}
  template:
    metadata: {labels: {app: apichain}}
    spec:
      containers: [{name: app, image: busybox:1.36}]
---
apiVersion: example.com/v2
kind: Widget
metadata: {name: from-apichain, namespace: interop}
spec: {size: 7}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: from-apichain, namespace: interop}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: reader}
subjects: [{kind: User, name: bob, apiGroup: rbac.authorization.k8s.io}]
`)
	out, err = kubectl(t, apichainKubeconfig, "apply", "-f", writes)
	require.NoError(t, err, out)
	out, err = kubectl(t, apichainKubeconfig, "patch", "configmap", "-n", "interop", "settings", "--type", "merge", "-p", `{"data":{"mode":"apichain"}}`)
	require.NoError(t, err, out)
	out, err = kubectl(t, apichainKubeconfig, "delete", "configmap", "-n", "interop", "to-delete")
	require.NoError(t, err, out)
	out, err = kubectl(t, apichainKubeconfig, "scale", "deployment", "-n", "interop", "web", "--replicas", "3")
	require.NoError(t, err, out)
	written := interopObjects(t, apichainKubeconfig)
	// Every object apichain wrote is in the form kube keeps its resource in: the same key
	// prefix and storage version, protobuf for built-in kinds and JSON for custom resources.
	kubeVersions := map[string]string{}
	for key, f := range kubeForms {
		kubeVersions[storedResourcePrefix(key)] = f.form
	}
	checked := 0
	for key, f := range storedForms(t, etcd) {
		if f.rev <= startRev || f.form == "encrypted" {
			continue
		}
		if want, ok := kubeVersions[storedResourcePrefix(key)]; ok {
			checked++
			assert.Equal(t, want, f.form, "%s, written by apichain, in kube's form", key)
		}
	}
	assert.Greater(t, checked, 5, "objects apichain wrote of resources kube wrote")
	t.Logf("%d objects apichain wrote are in kube's form for their resource", checked)
	p.signal(sigterm)
	require.Equal(t, 0, p.wait(time.Minute))
	k.stop()

	k.start(t, true)
	again := interopObjects(t, k.kubeconfig())
	for _, name := range []string{"ConfigMap interop/from-apichain", "Secret interop/from-apichain", "Deployment interop/from-apichain",
		"Widget interop/from-apichain", "RoleBinding interop/from-apichain", "ConfigMap interop/settings", "Deployment interop/web"} {
		want, got := written[name], again[name]
		require.NotNil(t, want, name)
		if !assert.NotNil(t, got, "%s, written by apichain, is read by kube", name) {
			continue
		}
		assert.Equal(t, want.GetUID(), got.GetUID(), name)
		assert.Equal(t, want.GetManagedFields(), got.GetManagedFields(), name)
		for _, field := range []string{"spec", "data", "subjects", "roleRef"} {
			assert.Equal(t, want.Object[field], got.Object[field], "%s: %s", name, field)
		}
	}
	assert.NotContains(t, again, "ConfigMap interop/to-delete", "deleted by apichain")
	out, err = kubectl(t, k.kubeconfig(), "get", "secret", "-n", "interop", "from-apichain", "-o", "jsonpath={.data.token}")
	require.NoError(t, err, out)
	plain, _ = base64.StdEncoding.DecodeString(out)
	assert.Equal(t, "apichain-secret", string(plain))
	if encrypted {
		resp, err := etcd.Get(context.Background(), "/registry/secrets/interop/from-apichain") // the same etcd, restarted
		require.NoError(t, err)
		require.Len(t, resp.Kvs, 1)
		assert.True(t, strings.HasPrefix(string(resp.Kvs[0].Value), "k8s:enc:secretbox:v1:shared:"), "apichain encrypted it as kube does")
	}
}

// storedForm is how an object is kept in etcd: "protobuf <apiVersion> <kind>", "json
// <apiVersion> <kind>" or "encrypted", and its mod revision.
type storedForm struct {
	form string
	rev  int64
}

// storedForms reads every object's stored form under /registry/.
func storedForms(t *testing.T, c *clientv3.Client) map[string]storedForm {
	t.Helper()
	resp, err := c.Get(context.Background(), "/registry/", clientv3.WithPrefix())
	require.NoError(t, err)
	forms := map[string]storedForm{}
	for _, kv := range resp.Kvs {
		f := storedForm{rev: kv.ModRevision}
		switch v := kv.Value; {
		case bytes.HasPrefix(v, []byte("k8s:enc:")):
			f.form = "encrypted"
		case bytes.HasPrefix(v, []byte("k8s\x00")):
			var u runtime.Unknown
			require.NoError(t, u.Unmarshal(v[4:]), string(kv.Key))
			f.form = "protobuf " + u.APIVersion + " " + u.Kind
		default:
			var tm metav1.TypeMeta
			if json.Unmarshal(v, &tm) != nil {
				continue // not an object (kube's and apichain's own bookkeeping)
			}
			f.form = "json " + tm.APIVersion + " " + tm.Kind
		}
		forms[string(kv.Key)] = f
	}
	return forms
}

// storedResourcePrefix is a key without its last segment (the name): its resource's prefix,
// with the namespace for namespaced kinds.
func storedResourcePrefix(key string) string { return key[:strings.LastIndexByte(key, '/')] }

func etcdRevision(t *testing.T, c *clientv3.Client) int64 {
	t.Helper()
	resp, err := c.Get(context.Background(), "/registry/", clientv3.WithCountOnly())
	require.NoError(t, err)
	return resp.Header.Revision
}
