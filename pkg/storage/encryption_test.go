package storage

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apichain/apichain/pkg/storage/encryption"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// aescbcConfig loads an EncryptionConfiguration encrypting secrets with aescbc under the named
// keys, the first writing.
func aescbcConfig(t *testing.T, keys map[string]string, names ...string) *encryption.Config {
	t.Helper()
	var b strings.Builder
	b.WriteString("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - aescbc:\n      keys:\n")
	for _, n := range names {
		if keys[n] == "" {
			k := make([]byte, 32)
			_, err := rand.Read(k)
			require.NoError(t, err)
			keys[n] = base64.StdEncoding.EncodeToString(k)
		}
		fmt.Fprintf(&b, "      - {name: %s, secret: %q}\n", n, keys[n])
	}
	file := filepath.Join(t.TempDir(), "enc.yaml")
	require.NoError(t, os.WriteFile(file, []byte(b.String()), 0o600))
	c, err := encryption.Load(context.Background(), file, false)
	require.NoError(t, err)
	return c
}

// Values of an encrypted resource are kept in etcd under kube's prefix and read back as
// written by Get, List and Watch; read with a key that no longer writes, they are stale (an
// update rewrites them); without their key they are an error, never garbage; other
// resources stay as they are.
func TestEncryptedValues(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	keys := map[string]string{}
	s := testStore.Encrypted(aescbcConfig(t, keys, "k1"))
	ns := fmt.Sprintf("ns%d", runs.Add(1))
	key := "/secrets/" + ns + "/a"
	rev, err := s.Create(ctx, key, []byte(`{"data":"plaintext"}`))
	require.NoError(t, err)

	raw, err := testClient.Get(ctx, "/registry"+key)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(raw.Kvs[0].Value), "k8s:enc:aescbc:v1:k1:"), "%q", raw.Kvs[0].Value)
	assert.NotContains(t, string(raw.Kvs[0].Value), "plaintext")

	kv, _, err := s.Get(ctx, key, 0)
	require.NoError(t, err)
	assert.Equal(t, `{"data":"plaintext"}`, string(kv.Value))
	assert.False(t, kv.Stale)
	list, err := s.List(ctx, "/secrets/"+ns, 0, "", 0)
	require.NoError(t, err)
	require.Len(t, list.KVs, 1)
	assert.Equal(t, `{"data":"plaintext"}`, string(list.KVs[0].Value))

	events := s.Watch(ctx, "/secrets/"+ns, rev)
	_, err = s.Update(ctx, key, []byte(`{"data":"second"}`), rev)
	require.NoError(t, err)
	ev := <-events
	require.NoError(t, ev.Err)
	assert.Equal(t, `{"data":"second"}`, string(ev.Value))
	assert.Equal(t, `{"data":"plaintext"}`, string(ev.PrevValue))

	rotated := testStore.Encrypted(aescbcConfig(t, keys, "k2", "k1"))
	kv, _, err = rotated.Get(ctx, key, 0)
	require.NoError(t, err)
	assert.Equal(t, `{"data":"second"}`, string(kv.Value))
	assert.True(t, kv.Stale, "written with k1 while k2 writes")
	_, err = rotated.Update(ctx, key, kv.Value, kv.ModRevision)
	require.NoError(t, err)
	kv, _, err = rotated.Get(ctx, key, 0)
	require.NoError(t, err)
	assert.False(t, kv.Stale, "rewritten with k2")

	_, _, err = testStore.Encrypted(aescbcConfig(t, map[string]string{}, "other")).Get(ctx, key, 0)
	assert.ErrorIs(t, err, ErrTransform)
	assert.NotContains(t, err.Error(), "second")

	plain := "/configmaps/" + ns + "/a"
	_, err = s.Create(ctx, plain, []byte("visible"))
	require.NoError(t, err)
	raw, err = testClient.Get(ctx, "/registry"+plain)
	require.NoError(t, err)
	assert.Equal(t, "visible", string(raw.Kvs[0].Value), "configmaps are not in the configuration")
}
