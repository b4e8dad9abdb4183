package e2e

import (
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apichain/apichain/pkg/certs"
	"github.com/apichain/apichain/pkg/storage"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
)

// checkNothingOpen: etcd answers only over TLS and only clients with a certificate from
// etcd's own CA; a backend mounts, read-only, its own credentials and CA certificates, and
// neither a CA key nor the gateway's client key.
func (s *stack) checkNothingOpen(t *testing.T, cfg *rest.Config) {
	core := s.containers("core")[0]
	mounts := strings.Fields(s.run(time.Minute, "docker", "inspect", "-f", "{{range .Mounts}}{{.Destination}}:{{.RW}} {{end}}", core))
	assert.Equal(t, []string{"/pki:false"}, mounts, "core mounts its credentials read-only, and nothing else")
	dir := t.TempDir()
	s.run(time.Minute, "docker", "cp", core+":/pki", dir)
	entries, err := os.ReadDir(filepath.Join(dir, "pki"))
	require.NoError(t, err)
	var files []string
	for _, e := range entries {
		files = append(files, e.Name())
	}
	assert.ElementsMatch(t, []string{certs.BundleCA, certs.BundleServingCert, certs.BundleServingKey, certs.BundleHealthcheckCert,
		certs.BundleHealthcheckKey, certs.BundleEtcdCA, certs.BundleEtcdClientCert, certs.BundleEtcdClientKey}, files)

	f := func(name string) string { return filepath.Join(dir, "pki", name) }
	adminCert, adminKey := filepath.Join(dir, "admin.crt"), filepath.Join(dir, "admin.key")
	require.NoError(t, os.WriteFile(adminCert, cfg.CertData, 0o600))
	require.NoError(t, os.WriteFile(adminKey, cfg.KeyData, 0o600))
	ip := strings.TrimSpace(s.run(time.Minute, "docker", "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", s.containers("etcd")[0]))
	read := func(endpoint, caFile, certFile, keyFile string) error {
		var tlsCfg *tls.Config
		if caFile != "" {
			var err error
			tlsCfg, err = certs.ClientTLSConfig(caFile, certFile, keyFile, "etcd")
			require.NoError(t, err)
		}
		c, err := storage.NewClient([]string{endpoint}, tlsCfg)
		require.NoError(t, err)
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_, _, err = storage.NewStore(c).Get(ctx, "/registry/namespaces/default", 0)
		return err
	}
	etcdURL := "https://" + ip + ":2379"
	assert.NoError(t, read(etcdURL, f(certs.BundleEtcdCA), f(certs.BundleEtcdClientCert), f(certs.BundleEtcdClientKey)),
		"core's etcd client certificate opens etcd")
	assert.Error(t, read("http://"+ip+":2379", "", "", ""), "no plain HTTP")
	assert.Error(t, read(etcdURL, f(certs.BundleEtcdCA), "", ""), "no client without a certificate")
	assert.Error(t, read(etcdURL, f(certs.BundleEtcdCA), adminCert, adminKey), "the cluster's admin certificate does not open etcd")
	assert.Error(t, read(etcdURL, f(certs.BundleEtcdCA), f(certs.BundleHealthcheckCert), f(certs.BundleHealthcheckKey)),
		"nor any other certificate of the cluster's CA")
}
