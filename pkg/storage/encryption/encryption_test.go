package encryption

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/storage/value"
)

const key32 = "1K5VNyrulsRfYaPHsRebl/pFRT50UtNG3Fo7uiKIKHM=" // 32 bytes

func load(t *testing.T, config string) (*Config, error) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "enc.yaml")
	require.NoError(t, os.WriteFile(file, []byte("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n"+config), 0o600))
	return Load(context.Background(), file, false)
}

func written(t *testing.T, tr value.Transformer, key string) string {
	t.Helper()
	out, err := tr.TransformToStorage(context.Background(), []byte("data"), value.DefaultContext(key))
	require.NoError(t, err)
	return string(out)
}

// A resource's own rule first, then its group's, then every resource's, then identity; an
// AES-GCM value is bound to its key (authenticated data).
func TestResourceRules(t *testing.T) {
	c, err := load(t, `resources:
- resources: [secrets, deployments.apps]
  providers: [{aescbc: {keys: [{name: a, secret: `+key32+`}]}}]
- resources: ["*.apps"]
  providers: [{aesgcm: {keys: [{name: g, secret: `+key32+`}]}}]
- resources: ["*.*"]
  providers: [{secretbox: {keys: [{name: s, secret: `+key32+`}]}}]
`)
	require.NoError(t, err)
	assert.Regexp(t, `^k8s:enc:aescbc:v1:a:`, written(t, c.For(schema.GroupResource{Resource: "secrets"}), "k"))
	assert.Regexp(t, `^k8s:enc:aescbc:v1:a:`, written(t, c.For(schema.GroupResource{Group: "apps", Resource: "deployments"}), "k"))
	assert.Regexp(t, `^k8s:enc:aesgcm:v1:g:`, written(t, c.For(schema.GroupResource{Group: "apps", Resource: "statefulsets"}), "k"))
	assert.Regexp(t, `^k8s:enc:secretbox:v1:s:`, written(t, c.For(schema.GroupResource{Resource: "configmaps"}), "k"))

	tr := c.For(schema.GroupResource{Group: "apps", Resource: "statefulsets"}) // AES-GCM authenticates its key
	stored := written(t, tr, "/registry/secrets/a")
	_, _, err = tr.TransformFromStorage(context.Background(), []byte(stored), value.DefaultContext("/registry/secrets/b"))
	assert.Error(t, err, "a value moved to another key does not decrypt")

	var none *Config
	assert.Nil(t, none.For(schema.GroupResource{Resource: "secrets"}), "no configuration: values kept as they are")
	only, err := load(t, "resources:\n- resources: [secrets]\n  providers: [{identity: {}}]\n")
	require.NoError(t, err)
	assert.Nil(t, only.For(schema.GroupResource{Resource: "configmaps"}), "no rule: values kept as they are")
	assert.Same(t, only.For(schema.GroupResource{Resource: "secrets"}), only.For(schema.GroupResource{Resource: "secrets"}), "made once")
}

// Configurations kube refuses are refused, with kube's messages.
func TestInvalidConfigurations(t *testing.T) {
	for name, config := range map[string]string{
		"masked by a group wildcard": `resources:
- resources: ["*.apps"]
  providers: [{identity: {}}]
- resources: [deployments.apps]
  providers: [{identity: {}}]
`,
		"KMS v1": `resources:
- resources: [secrets]
  providers: [{kms: {name: old, endpoint: "unix:///tmp/none.sock", cachesize: 10, timeout: 1s}}]
`,
		"a short secretbox key": `resources:
- resources: [secrets]
  providers: [{secretbox: {keys: [{name: s, secret: c2hvcnQ=}]}}]
`,
		"no providers": `resources:
- resources: [secrets]
`,
		"not base64": `resources:
- resources: [secrets]
  providers: [{aescbc: {keys: [{name: a, secret: "!!"}]}}]
`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := load(t, config)
			assert.Error(t, err)
		})
	}
}
