package certs

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"

	"github.com/apichain/apichain/pkg/user"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
)

func TestEnsureBundles(t *testing.T) {
	p, err := EnsurePKI(t.TempDir(), nil, []string{"apichain-backend"})
	require.NoError(t, err)
	b := Bundles{Dir: t.TempDir(), Backends: []string{"core", "aggregator"}, BackendHost: "apichain-backend",
		FrontProxyClients: []string{"aggregator"}, EtcdMembers: []string{"etcd", "etcd1"}, NATSHosts: []string{"nats", "nats1"},
		APIServerURL: "https://gateway:6443"}
	require.NoError(t, p.EnsureBundles(b))

	pool := func(file string) *x509.CertPool {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		pool := x509.NewCertPool()
		require.True(t, pool.AppendCertsFromPEM(data))
		return pool
	}
	verify := func(certFile, keyFile string, roots *x509.CertPool, usage x509.ExtKeyUsage, host string) error {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		require.NoError(t, err, "%s matches its key", certFile)
		_, err = pair.Leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{usage}, DNSName: host})
		return err
	}
	clusterCA, etcdCA := pool(p.CAFile), pool(filepath.Join(b.Dir, "etcd", BundleCA))

	for _, svc := range b.Backends {
		dir := filepath.Join(b.Dir, svc)
		f := func(name string) string { return filepath.Join(dir, name) }
		assert.NoError(t, verify(f(BundleServingCert), f(BundleServingKey), pool(f(BundleCA)), x509.ExtKeyUsageServerAuth, "apichain-backend"))
		assert.NoError(t, verify(f(BundleHealthcheckCert), f(BundleHealthcheckKey), clusterCA, x509.ExtKeyUsageClientAuth, ""))
		assert.NoError(t, verify(f(BundleEtcdClientCert), f(BundleEtcdClientKey), pool(f(BundleEtcdCA)), x509.ExtKeyUsageClientAuth, ""))
		assert.Error(t, verify(f(BundleEtcdClientCert), f(BundleEtcdClientKey), clusterCA, x509.ExtKeyUsageClientAuth, ""),
			"etcd's CA is its own")
		assert.Error(t, verify(f(BundleHealthcheckCert), f(BundleHealthcheckKey), etcdCA, x509.ExtKeyUsageClientAuth, ""),
			"no cluster certificate opens etcd")
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		// Its identity towards the API server, for its metrics endpoint's reviews.
		assert.NoError(t, verify(f(BundleDelegationCert), f(BundleDelegationKey), clusterCA, x509.ExtKeyUsageClientAuth, ""))
		pair, err := tls.LoadX509KeyPair(f(BundleDelegationCert), f(BundleDelegationKey))
		require.NoError(t, err)
		assert.Equal(t, "system:apichain:"+svc, pair.Leaf.Subject.CommonName)
		assert.Equal(t, []string{user.BackendsGroup}, pair.Leaf.Subject.Organization)
		kc, err := clientcmd.LoadFromFile(f(BundleDelegationKubeconfig))
		require.NoError(t, err)
		cluster := kc.Clusters[kc.Contexts[kc.CurrentContext].Cluster]
		assert.Equal(t, "https://gateway:6443", cluster.Server)
		certPEM, _ := os.ReadFile(f(BundleDelegationCert))
		assert.Equal(t, certPEM, kc.AuthInfos[kc.Contexts[kc.CurrentContext].AuthInfo].ClientCertificateData)

		want := []string{BundleCA, BundleEtcdCA, BundleEtcdClientCert, BundleEtcdClientKey, BundleHealthcheckCert, BundleHealthcheckKey, BundleServingCert, BundleServingKey,
			BundleDelegationCert, BundleDelegationKey, BundleDelegationKubeconfig}
		if svc == "aggregator" {
			want = append(want, BundleFrontProxyCert, BundleFrontProxyKey)
		}
		assert.ElementsMatch(t, want, names, "%s's bundle holds its own credentials and CA certificates, no CA key", svc)
	}
	// Prometheus scrapes as system:monitoring.
	prom := func(name string) string { return filepath.Join(b.Dir, PrometheusBundle, name) }
	assert.NoError(t, verify(prom(BundleMonitoringCert), prom(BundleMonitoringKey), pool(prom(BundleCA)), x509.ExtKeyUsageClientAuth, ""))
	pair, err := tls.LoadX509KeyPair(prom(BundleMonitoringCert), prom(BundleMonitoringKey))
	require.NoError(t, err)
	assert.Equal(t, []string{user.MonitoringGroup}, pair.Leaf.Subject.Organization)

	core := filepath.Join(b.Dir, "core", BundleServingKey)
	agg := filepath.Join(b.Dir, "aggregator", BundleServingKey)
	coreKey, _ := os.ReadFile(core)
	aggKey, _ := os.ReadFile(agg)
	assert.NotEqual(t, coreKey, aggKey, "each backend has a key of its own")

	for _, m := range b.EtcdMembers {
		crt, key := filepath.Join(b.Dir, "etcd", m+".crt"), filepath.Join(b.Dir, "etcd", m+".key")
		assert.NoError(t, verify(crt, key, etcdCA, x509.ExtKeyUsageServerAuth, m))
		assert.NoError(t, verify(crt, key, etcdCA, x509.ExtKeyUsageClientAuth, ""), "a peer's client too")
	}

	assert.NoError(t, verify(filepath.Join(b.Dir, NATSBundle, BundleNATSCert), filepath.Join(b.Dir, NATSBundle, BundleNATSKey),
		clusterCA, x509.ExtKeyUsageServerAuth, "nats"))

	balancer, err := os.ReadDir(filepath.Join(b.Dir, BalancerBundle))
	require.NoError(t, err)
	require.Len(t, balancer, 1)
	assert.Equal(t, BundleCA, balancer[0].Name(), "the balancer gets the cluster CA's certificate alone")
	assert.NoError(t, verify(p.ServingCertFile, p.ServingKeyFile, pool(filepath.Join(b.Dir, BalancerBundle, BundleCA)),
		x509.ExtKeyUsageServerAuth, "localhost"), "which verifies the gateways' serving certificate")

	// Kept as they are on the next run.
	require.NoError(t, p.EnsureBundles(b))
	again, _ := os.ReadFile(core)
	assert.Equal(t, coreKey, again)
}
