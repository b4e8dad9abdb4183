package e2e

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	kmsservice "k8s.io/kms/pkg/service"
)

// rawEtcd reads what the all-in-one's embedded etcd keeps under key, as etcdctl get would.
func rawEtcd(t *testing.T, data, key string) []byte {
	t.Helper()
	endpoints, err := os.ReadFile(filepath.Join(data, "etcd-endpoint"))
	require.NoError(t, err)
	c, err := clientv3.New(clientv3.Config{Endpoints: strings.Split(strings.TrimSpace(string(endpoints)), ","), DialTimeout: 5 * time.Second})
	require.NoError(t, err)
	defer c.Close()
	resp, err := c.Get(context.Background(), key)
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1, "%s in etcd", key)
	return resp.Kvs[0].Value
}

func createSecret(t *testing.T, cs *kubernetes.Clientset, name, value string) {
	t.Helper()
	_, err := cs.CoreV1().Secrets("default").Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name},
		StringData: map[string]string{"password": value}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

func requireSecret(t *testing.T, cs *kubernetes.Clientset, name, value string) {
	t.Helper()
	s, err := cs.CoreV1().Secrets("default").Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, value, string(s.Data["password"]))
}

func secretboxKey(t *testing.T) string {
	key := make([]byte, 32)
	_, err := rand.Read(key)
	require.NoError(t, err)
	return base64.StdEncoding.EncodeToString(key)
}

func encryptionConfig(providers ...string) string {
	return "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n  - resources: [secrets]\n    providers:\n" +
		strings.Join(providers, "")
}

func secretboxProvider(name, key string) string {
	return fmt.Sprintf("      - secretbox: {keys: [{name: %s, secret: %q}]}\n", name, key)
}

// The all-in-one encrypts Secrets by default, with a key it generated beside its PKI: etcd
// holds kube's k8s:enc:secretbox:v1:key1: prefix and no plaintext, clients read the Secret as
// written, and a ConfigMap stays as it was.
func TestEncryptionAtRestByDefault(t *testing.T) {
	c, _ := startAllInOne(t)
	cs := kubernetes.NewForConfigOrDie(c.config)
	createSecret(t, cs, "s1", "hunter2-by-default")
	_, err := cs.CoreV1().ConfigMaps("default").Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "plain"},
		Data: map[string]string{"k": "visible-value"}}, metav1.CreateOptions{})
	require.NoError(t, err)

	raw := rawEtcd(t, c.data, "/registry/secrets/default/s1")
	assert.True(t, bytes.HasPrefix(raw, []byte("k8s:enc:secretbox:v1:key1:")), "%q", raw[:min(len(raw), 40)])
	assert.NotContains(t, string(raw), "hunter2")
	assert.NotContains(t, string(raw), base64.StdEncoding.EncodeToString([]byte("hunter2-by-default")))
	requireSecret(t, cs, "s1", "hunter2-by-default")
	assert.Contains(t, string(rawEtcd(t, c.data, "/registry/configmaps/default/plain")), "visible-value", "only Secrets are encrypted")

	config, err := os.ReadFile(filepath.Join(c.data, "pki", "encryption-config.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(config), "secretbox")
	info, err := os.Stat(filepath.Join(c.data, "pki", "encryption-config.yaml"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "the key is readable by its owner only")
}

// kube's documented key rotation, with the configuration reloaded while the server runs: a
// new key added as a reader, then made the writer, every Secret rewritten with kubectl
// (replace), the old key removed; every Secret is under the new key and still readable.
func TestEncryptionKeyRotation(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "encryption.yaml")
	key1, key2 := secretboxKey(t), secretboxKey(t)
	writeFile(t, file, encryptionConfig(secretboxProvider("key1", key1)))
	c, _ := startAllInOne(t, "--encryption-provider-config", file, "--encryption-provider-config-automatic-reload")
	cs := kubernetes.NewForConfigOrDie(c.config)
	kubeconfig := filepath.Join(c.data, "admin.kubeconfig")
	for i := range 5 {
		createSecret(t, cs, fmt.Sprintf("r%d", i), fmt.Sprintf("value-%d", i))
	}
	prefixOf := func(name string) string {
		raw := rawEtcd(t, c.data, "/registry/secrets/default/"+name)
		return string(raw[:min(len(raw), len("k8s:enc:secretbox:v1:key1:"))])
	}
	// Each backend of the all-in-one reloads the file on its own and counts it.
	reloads := func() int {
		_, body, _ := c.get("/metrics")
		return countSamples(body, "apiserver_encryption_config_controller_automatic_reloads_total{", `status="success"`)
	}
	change := func(config string) {
		before := reloads()
		writeFile(t, file, config)
		require.Eventually(t, func() bool { return reloads() >= before+3 }, time.Minute, 250*time.Millisecond,
			"every backend reloads the configuration")
	}

	// 1. The new key, as a reader everywhere first. 2. The new key writing.
	change(encryptionConfig(secretboxProvider("key1", key1), secretboxProvider("key2", key2)))
	createSecret(t, cs, "between", "b")
	assert.Equal(t, "k8s:enc:secretbox:v1:key1:", prefixOf("between"), "key1 still writes")
	change(encryptionConfig(secretboxProvider("key2", key2), secretboxProvider("key1", key1)))
	createSecret(t, cs, "after", "a")
	assert.Equal(t, "k8s:enc:secretbox:v1:key2:", prefixOf("after"), "key2 writes")
	assert.Equal(t, "k8s:enc:secretbox:v1:key1:", prefixOf("r0"), "untouched Secrets stay under the old key")

	// 3. Every Secret rewritten: kubectl get secrets --all-namespaces -o json | kubectl replace -f -
	all, err := kubectl(t, kubeconfig, "get", "secrets", "--all-namespaces", "-o", "json")
	require.NoError(t, err, all)
	replace := exec.Command("kubectl", "--kubeconfig", kubeconfig, "replace", "-f", "-")
	replace.Stdin = strings.NewReader(all)
	out, err := replace.CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, name := range []string{"r0", "r1", "r2", "r3", "r4", "between"} {
		assert.Equal(t, "k8s:enc:secretbox:v1:key2:", prefixOf(name), "%s rewritten under the new key", name)
	}

	// 4. The old key removed: every Secret still reads.
	change(encryptionConfig(secretboxProvider("key2", key2)))
	for i := range 5 {
		requireSecret(t, cs, fmt.Sprintf("r%d", i), fmt.Sprintf("value-%d", i))
	}
}

// countSamples sums the samples of an exposition whose line starts with prefix and holds label
// (none: 0, as a counter vector before its first increment).
func countSamples(exposition, prefix, label string) int {
	total := 0
	for _, line := range strings.Split(exposition, "\n") {
		if strings.HasPrefix(line, prefix) && strings.Contains(line, label) {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			total += int(v)
		}
	}
	return total
}

// testKMS is a KMS v2 plugin for tests: AES-GCM under one key, counting its calls.
type testKMS struct {
	aead              cipher.AEAD
	encrypts, decrypt atomic.Int64
}

func newTestKMS(t *testing.T) *testKMS {
	key := make([]byte, 32)
	_, err := rand.Read(key)
	require.NoError(t, err)
	block, err := aes.NewCipher(key)
	require.NoError(t, err)
	aead, err := cipher.NewGCM(block)
	require.NoError(t, err)
	return &testKMS{aead: aead}
}

func (k *testKMS) Encrypt(_ context.Context, _ string, data []byte) (*kmsservice.EncryptResponse, error) {
	k.encrypts.Add(1)
	nonce := make([]byte, k.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return &kmsservice.EncryptResponse{Ciphertext: k.aead.Seal(nonce, nonce, data, nil), KeyID: "test-key-1"}, nil
}

func (k *testKMS) Decrypt(_ context.Context, _ string, req *kmsservice.DecryptRequest) ([]byte, error) {
	k.decrypt.Add(1)
	if req.KeyID != "test-key-1" || len(req.Ciphertext) < k.aead.NonceSize() {
		return nil, errors.New("unknown key or ciphertext")
	}
	n := k.aead.NonceSize()
	return k.aead.Open(nil, req.Ciphertext[:n], req.Ciphertext[n:], nil)
}

func (k *testKMS) Status(context.Context) (*kmsservice.StatusResponse, error) {
	return &kmsservice.StatusResponse{Version: "v2", Healthz: "ok", KeyID: "test-key-1"}, nil
}

// A KMS v2 plugin (kube's protocol over a unix socket, served by kube's own k8s.io/kms server
// side) encrypts the data key apichain encrypts Secrets with: etcd holds
// k8s:enc:kms:v2:<name>:, the plugin was asked to encrypt, the Secret reads back, and the
// kms-provider health check is in /readyz.
func TestEncryptionKMSv2(t *testing.T) {
	dir, err := os.MkdirTemp("", "kms") // a unix socket's path must be short
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	socket := filepath.Join(dir, "kms.sock")
	plugin := newTestKMS(t)
	server := kmsservice.NewGRPCService(socket, 10*time.Second, plugin)
	go func() { _ = server.ListenAndServe() }()
	t.Cleanup(server.Close)
	require.Eventually(t, func() bool { _, err := os.Stat(socket); return err == nil }, 10*time.Second, 20*time.Millisecond)

	file := filepath.Join(t.TempDir(), "encryption.yaml")
	writeFile(t, file, encryptionConfig(fmt.Sprintf("      - kms: {apiVersion: v2, name: testkms, endpoint: %q, timeout: 3s}\n", "unix://"+socket),
		"      - identity: {}\n"))
	c, _ := startAllInOne(t, "--encryption-provider-config", file)
	cs := kubernetes.NewForConfigOrDie(c.config)
	createSecret(t, cs, "k1", "kms-protected")
	raw := rawEtcd(t, c.data, "/registry/secrets/default/k1")
	assert.True(t, bytes.HasPrefix(raw, []byte("k8s:enc:kms:v2:testkms:")), "%q", raw[:min(len(raw), 40)])
	assert.NotContains(t, string(raw), "kms-protected")
	assert.Positive(t, plugin.encrypts.Load(), "the plugin encrypted the data key")
	requireSecret(t, cs, "k1", "kms-protected")
	_, body, _ := c.get("/readyz?verbose")
	assert.Contains(t, body, "kms-provider-0 ok", "kube's KMS health check, per provider without reload")
}
