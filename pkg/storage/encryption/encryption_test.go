package encryption

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/storage/value"
	compbasemetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
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

// With automatic reload, a changed valid file replaces the configuration in use; an invalid
// one is counted as a failure and the last good one stays.
func TestAutomaticReload(t *testing.T) {
	reloadInterval = 20 * time.Millisecond
	defer func() { reloadInterval = 10 * time.Second }()
	file := filepath.Join(t.TempDir(), "enc.yaml")
	write := func(body string) {
		require.NoError(t, os.WriteFile(file, []byte("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n"+body), 0o600))
	}
	secretbox := func(name string) string {
		return "resources:\n- resources: [secrets]\n  providers: [{secretbox: {keys: [{name: " + name + ", secret: " + key32 + "}]}}]\n"
	}
	write(secretbox("one"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d, err := Start(ctx, Options{ConfigFile: file, AutomaticReload: true}, "reload-test", slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	secrets := schema.GroupResource{Resource: "secrets"}
	assert.Regexp(t, `^k8s:enc:secretbox:v1:one:`, written(t, d.For(secrets), "k"))
	require.Len(t, d.HealthChecks(), 1, "kms-providers, with reload")
	assert.Equal(t, "kms-providers", d.HealthChecks()[0].Name())

	failures := func() float64 { return counter(t, reloads.WithLabelValues("failure", idHash("reload-test"))) }
	before := failures()
	write("resources: [{resources: [secrets]}]\n") // no providers: invalid
	require.Eventually(t, func() bool { return failures() > before }, 10*time.Second, 10*time.Millisecond, "the bad file is counted")
	assert.Regexp(t, `^k8s:enc:secretbox:v1:one:`, written(t, d.For(secrets), "k"), "the last good configuration stays")

	write(secretbox("two"))
	require.Eventually(t, func() bool {
		return strings.HasPrefix(written(t, d.For(secrets), "k"), "k8s:enc:secretbox:v1:two:")
	}, 10*time.Second, 10*time.Millisecond, "the new file is in use")
}

func counter(t *testing.T, c compbasemetrics.CounterMetric) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(c)
	require.NoError(t, err)
	return v
}
