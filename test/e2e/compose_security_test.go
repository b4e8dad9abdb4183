package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apichain/apichain/pkg/certs"
	"github.com/apichain/apichain/pkg/lifecycle"
	"github.com/apichain/apichain/pkg/storage"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"k8s.io/client-go/rest"
)

// checkNothingOpen: etcd answers only over TLS and only clients with a certificate from
// etcd's own CA; NATS only over TLS and only to the services' nkeys, each of which may write
// its own service's lifecycle state and no other's; a backend mounts, read-only, its own
// credentials, CA certificates and the encryption at rest configuration, and neither a CA key
// nor the gateway's client key.
func (s *stack) checkNothingOpen(t *testing.T, cfg *rest.Config) {
	core := s.containers("core")[0]
	mounts := strings.Fields(s.run(time.Minute, "docker", "inspect", "-f", "{{range .Mounts}}{{.Destination}}:{{.RW}} {{end}}", core))
	assert.ElementsMatch(t, []string{"/pki:false", "/etc/apichain/tracing:false"}, mounts,
		"core mounts its credentials and the tracing configuration read-only, and nothing else")
	dir := t.TempDir()
	s.run(time.Minute, "docker", "cp", core+":/pki", dir)
	entries, err := os.ReadDir(filepath.Join(dir, "pki"))
	require.NoError(t, err)
	var files []string
	for _, e := range entries {
		files = append(files, e.Name())
	}
	assert.ElementsMatch(t, []string{certs.BundleCA, certs.BundleServingCert, certs.BundleServingKey, certs.BundleHealthcheckCert,
		certs.BundleHealthcheckKey, certs.BundleEtcdCA, certs.BundleEtcdClientCert, certs.BundleEtcdClientKey, certs.BundleNkey,
		certs.BundleDelegationCert, certs.BundleDelegationKey, certs.BundleDelegationKubeconfig, certs.EncryptionConfigFile}, files)
	if info, err := os.Stat(filepath.Join(dir, "pki", certs.EncryptionConfigFile)); assert.NoError(t, err) {
		assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "the encryption key is its owner's only")
	}

	f := func(name string) string { return filepath.Join(dir, "pki", name) }
	adminCert, adminKey := filepath.Join(dir, "admin.crt"), filepath.Join(dir, "admin.key")
	require.NoError(t, os.WriteFile(adminCert, cfg.CertData, 0o600))
	require.NoError(t, os.WriteFile(adminKey, cfg.KeyData, 0o600))
	ip := s.containerIP("etcd")
	read := func(endpoint, caFile, certFile, keyFile string) error {
		var tlsCfg *tls.Config
		if caFile != "" {
			var err error
			tlsCfg, err = certs.ClientTLSConfig(caFile, certFile, keyFile, "etcd")
			require.NoError(t, err)
		}
		// etcd's client checks an IP endpoint's certificate for the IP, so dial the member's
		// name (as the backends do) and reach it at its address.
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, TLS: tlsCfg, DialTimeout: 3 * time.Second, Logger: zap.NewNop(),
			DialOptions: []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, "tcp", strings.Replace(addr, "etcd", ip, 1))
			})}})
		require.NoError(t, err)
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_, err = storage.NewStore(c, storage.DefaultPrefix).CurrentRevision(ctx)
		return err
	}
	etcdURL := "https://etcd:2379"
	assert.NoError(t, read(etcdURL, f(certs.BundleEtcdCA), f(certs.BundleEtcdClientCert), f(certs.BundleEtcdClientKey)),
		"core's etcd client certificate opens etcd")
	assert.Error(t, read("http://etcd:2379", "", "", ""), "no plain HTTP")
	assert.Error(t, read(etcdURL, f(certs.BundleEtcdCA), "", ""), "no client without a certificate")
	assert.Error(t, read(etcdURL, f(certs.BundleEtcdCA), adminCert, adminKey), "the cluster's admin certificate does not open etcd")
	assert.Error(t, read(etcdURL, f(certs.BundleEtcdCA), f(certs.BundleHealthcheckCert), f(certs.BundleHealthcheckKey)),
		"nor any other certificate of the cluster's CA")

	// A backend's metrics endpoint: anonymous 401; the admin (system:masters) gets in, as the
	// gateway's review says.
	metricsURL := "https://" + s.containerIP("core") + ":9091/metrics"
	scrape := func(pairs []tls.Certificate) int {
		roots := x509.NewCertPool()
		ca, err := os.ReadFile(f(certs.BundleCA))
		require.NoError(t, err)
		roots.AppendCertsFromPEM(ca)
		hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots,
			ServerName: "apichain-backend", Certificates: pairs, MinVersion: tls.VersionTLS12}}}
		resp, err := hc.Get(metricsURL)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusUnauthorized, scrape(nil), "core's metrics need credentials")
	admin, err := tls.X509KeyPair(cfg.CertData, cfg.KeyData)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, scrape([]tls.Certificate{admin}), "the admin scrapes core's metrics")

	// NATS, reached at its address under its name.
	natsAddr := s.containerIP("nats") + ":4222"
	tlsCfg, err := certs.ClientTLSConfig(f(certs.BundleCA), "", "", "nats")
	require.NoError(t, err)
	nkey, err := nats.NkeyOptionFromSeed(f(certs.BundleNkey))
	require.NoError(t, err)
	nc, err := nats.Connect("tls://"+natsAddr, nats.Secure(tlsCfg), nkey, nats.Timeout(3*time.Second))
	require.NoError(t, err, "core's nkey signs in to NATS")
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	kv, err := js.KeyValue(ctx, lifecycle.Bucket)
	require.NoError(t, err, "and reads the lifecycle bucket")
	st, err := js.Stream(ctx, "KV_"+lifecycle.Bucket)
	require.NoError(t, err)
	assert.Equal(t, 3, st.CachedInfo().Config.Replicas, "the lifecycle bucket is kept on the three NATS nodes")
	if assert.NotNil(t, st.CachedInfo().Cluster) {
		assert.Len(t, st.CachedInfo().Cluster.Replicas, 2, "a leader and two replicas: %+v", st.CachedInfo().Cluster)
	}
	short, cancelShort := context.WithTimeout(ctx, 2*time.Second)
	defer cancelShort()
	_, err = kv.Put(short, lifecycle.Key("gateway", "forged"), []byte("x"))
	assert.Error(t, err, "but may not write the gateway's state")
	_, err = nats.Connect("nats://"+natsAddr, nats.Timeout(3*time.Second))
	assert.Error(t, err, "no plain NATS connection")
	_, err = nats.Connect("tls://"+natsAddr, nats.Secure(tlsCfg), nats.Timeout(3*time.Second))
	assert.Error(t, err, "no NATS connection without an nkey")
}

// containerIP is the address of a compose service's (first) container.
func (s *stack) containerIP(service string) string {
	return strings.TrimSpace(s.run(time.Minute, "docker", "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", s.containers(service)[0]))
}
