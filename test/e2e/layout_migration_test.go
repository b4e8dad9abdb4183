package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apichain/apichain/pkg/embedded"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// legacyLayout is a data directory an apichain before kube's storage layout wrote
// (testdata/layout-before-kube/record.sh made it with the binary of commit 92a2862).
const legacyLayout = "testdata/layout-before-kube"

// legacyBulk is how many ConfigMaps bulk-0001... the recording holds besides the others.
const legacyBulk = 700

// An etcd written by an earlier apichain moves to kube's layout: interrupted half way by a
// crash (apichain storage migrate stopped on purpose), nothing is lost or doubled; the
// all-in-one finishes the move on its next start, and every object reads back as that
// release served it (same UID, creation time, labels, contents and field managers), Secrets
// still readable and now encrypted under their new keys, and the runs recorded.
func TestLayoutMigrationFromEarlierApichain(t *testing.T) {
	data := tempDataDir(t)
	restoreLegacy(t, data)
	before := etcdKeys(t, data, "/registry/")
	configMaps := 0
	for _, k := range before {
		if strings.HasPrefix(k, "/registry/core/configmaps/") {
			configMaps++
		}
	}
	require.Greater(t, configMaps, legacyBulk)

	half := strconv.Itoa(len(before) / 2)
	out, err := exec.Command(binary("apichain"), "storage", "migrate", "--data-dir", data, "--testing-stop-after", half).CombinedOutput()
	require.Error(t, err, "%s", out)
	assert.Contains(t, string(out), "stopped on purpose")
	var old, moved int
	for _, k := range etcdKeys(t, data, "/registry/") {
		switch {
		case strings.HasPrefix(k, "/registry/core/configmaps/"):
			old++
		case strings.HasPrefix(k, "/registry/configmaps/"):
			moved++
		}
	}
	assert.Equal(t, configMaps, old+moved, "every ConfigMap once, at its old key or its new one")
	assert.True(t, old > 0 && moved > 0, "interrupted half way through the ConfigMaps: %d old, %d moved", old, moved)

	port := strconv.Itoa(freePort(t))
	p := start(t, "apichain", "--data-dir", data, "--secure-port", port)
	c := waitKubeconfig(t, filepath.Join(data, "admin.kubeconfig"))
	c.waitReady(60 * time.Second)
	assert.Contains(t, p.output(), "storage layout migration")

	dyn := dynamic.NewForConfigOrDie(c.config)
	var expected []json.RawMessage
	raw, err := os.ReadFile(filepath.Join(legacyLayout, "expected.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &expected))
	ctx := context.Background()
	for _, item := range expected {
		u := &unstructured.Unstructured{}
		require.NoError(t, u.UnmarshalJSON(item))
		want := u.Object
		if u.GetName() == "kube-root-ca.crt" {
			continue // the controller writes the data directory's new CA into it
		}
		gv, err := schema.ParseGroupVersion(u.GetAPIVersion())
		require.NoError(t, err)
		gvr := gv.WithResource(legacyResource(u.GetKind()))
		got, err := dyn.Resource(gvr).Namespace(u.GetNamespace()).Get(ctx, u.GetName(), metav1.GetOptions{})
		if !assert.NoError(t, err, "%s %s/%s", u.GetKind(), u.GetNamespace(), u.GetName()) {
			continue
		}
		what := u.GetKind() + " " + u.GetNamespace() + "/" + u.GetName()
		assert.Equal(t, u.GetUID(), got.GetUID(), what)
		assert.Equal(t, u.GetCreationTimestamp(), got.GetCreationTimestamp(), what)
		assert.Equal(t, u.GetLabels(), got.GetLabels(), what)
		for _, field := range []string{"data", "spec", "rules", "roleRef", "subjects", "webhooks", "note", "regarding", "type"} {
			assert.Equal(t, want[field], got.Object[field], "%s: %s", what, field)
		}
		if !legacyHasStatus(u.GetKind()) { // controllers write the others' status, with field managers of their own
			assert.Equal(t, u.GetManagedFields(), got.GetManagedFields(), what)
		}
	}
	cs := kubernetes.NewForConfigOrDie(c.config)
	secret, err := cs.CoreV1().Secrets("legacy").Get(ctx, "db-password", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "s3cr3t-from-the-old-layout", string(secret.Data["password"]))
	bulk, err := cs.CoreV1().ConfigMaps("legacy").List(ctx, metav1.ListOptions{LabelSelector: "", FieldSelector: ""})
	require.NoError(t, err)
	n := 0
	for _, cm := range bulk.Items {
		if strings.HasPrefix(cm.Name, "bulk-") {
			n++
			i, _ := strconv.Atoi(strings.TrimPrefix(cm.Name, "bulk-"))
			assert.Equal(t, strconv.Itoa(i), cm.Data["i"], cm.Name)
		}
	}
	assert.Equal(t, legacyBulk, n)

	// etcd holds kube's layout only: protobuf under kube's keys, Secrets encrypted for them.
	assert.True(t, bytes.HasPrefix(rawEtcd(t, data, "/registry/configmaps/legacy/settings"), []byte("k8s\x00")))
	enc := rawEtcd(t, data, "/registry/secrets/legacy/db-password")
	assert.True(t, bytes.HasPrefix(enc, []byte("k8s:enc:secretbox:v1:key1:")), "%q", enc[:min(len(enc), 30)])
	assert.NotContains(t, string(enc), "s3cr3t")
	var record struct {
		Runs []struct {
			Finished time.Time      `json:"finished"`
			Moved    map[string]int `json:"moved"`
		} `json:"runs"`
	}
	require.NoError(t, json.Unmarshal(rawEtcd(t, data, "/registry/apichain/storage-layout"), &record))
	require.Len(t, record.Runs, 2, "the interrupted run and the one that finished")
	assert.True(t, record.Runs[0].Finished.IsZero(), "the first was interrupted")
	assert.False(t, record.Runs[1].Finished.IsZero())
	assert.Positive(t, record.Runs[1].Moved["configmaps"], "%+v", record.Runs)
	keys := etcdKeys(t, data, "/registry/core/")
	assert.Empty(t, keys, "nothing left in the earlier layout")
}

// restoreLegacy restores the recorded data directory into data, with its encryption key.
func restoreLegacy(t *testing.T, data string) {
	t.Helper()
	gz, err := os.Open(filepath.Join(legacyLayout, "etcd.snapshot.gz"))
	require.NoError(t, err)
	defer gz.Close()
	r, err := gzip.NewReader(gz)
	require.NoError(t, err)
	snap := filepath.Join(t.TempDir(), "etcd.snapshot")
	f, err := os.Create(snap)
	require.NoError(t, err)
	_, err = io.Copy(f, r)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	out, err := exec.Command(binary("apichain"), "etcd", "snapshot", "restore", snap, "--data-dir", data).CombinedOutput()
	require.NoError(t, err, "%s", out)
	key, err := os.ReadFile(filepath.Join(legacyLayout, "encryption-config.yaml"))
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(data, "pki"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(data, "pki", "encryption-config.yaml"), key, 0o600))
}

// etcdKeys lists the keys under prefix in the data directory's etcd: the running apichain's,
// or one started for the purpose when it is stopped.
func etcdKeys(t *testing.T, data, prefix string) []string {
	t.Helper()
	endpoints, err := embedded.RunningEtcdEndpoints(data)
	if err != nil {
		e, err := embedded.StartEtcd(context.Background(), data, 0, 0)
		require.NoError(t, err)
		defer e.Stop()
		endpoints = e.Endpoints()
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second})
	require.NoError(t, err)
	defer c.Close()
	resp, err := c.Get(context.Background(), prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	require.NoError(t, err)
	var keys []string
	for _, kv := range resp.Kvs {
		keys = append(keys, string(kv.Key))
	}
	return keys
}

// legacyResource is the resource of the recording's kinds.
func legacyResource(kind string) string {
	switch kind {
	case "HorizontalPodAutoscaler":
		return "horizontalpodautoscalers"
	case "CustomResourceDefinition":
		return "customresourcedefinitions"
	case "ValidatingWebhookConfiguration":
		return "validatingwebhookconfigurations"
	}
	k := strings.ToLower(kind)
	if strings.HasSuffix(k, "s") {
		return k + "es"
	}
	return k + "s"
}

// legacyHasStatus: controllers write the kind's status.
func legacyHasStatus(kind string) bool {
	switch kind {
	case "Deployment", "Service", "HorizontalPodAutoscaler", "CustomResourceDefinition", "APIService", "Namespace":
		return true
	}
	return false
}

// --etcd-prefix and --storage-media-type as kube takes them: objects under the prefix given,
// in the media type given (custom resources are JSON whatever it says).
func TestEtcdPrefixAndStorageMediaType(t *testing.T) {
	c, _ := startAllInOne(t, "--etcd-prefix", "/tenant-a/", "--storage-media-type", "application/json")
	out, err := kubectl(t, filepath.Join(c.data, "admin.kubeconfig"), "create", "configmap", "prefixed", "--from-literal", "k=v")
	require.NoError(t, err, out)
	raw := rawEtcd(t, c.data, "/tenant-a/configmaps/default/prefixed")
	assert.True(t, json.Valid(raw), "JSON, as asked: %q", raw)
	assert.Contains(t, string(raw), `"kind":"ConfigMap","apiVersion":"v1"`)
	assert.Empty(t, etcdKeys(t, c.data, "/registry/configmaps/"), "nothing under kube's default prefix")

	bad := start(t, "apichain", "--data-dir", tempDataDir(t), "--secure-port", "0", "--storage-media-type", "application/cbor")
	assert.NotEqual(t, 0, bad.wait(30*time.Second), "an unknown storage media type is refused")
	assert.Contains(t, bad.output(), `"application/cbor" is not one of application/vnd.kubernetes.protobuf, application/json, application/yaml`)
}
