package storage

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apichain/apichain/pkg/certs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/server/v3/embed"
)

// An etcd that serves clients over TLS and demands a client certificate: a client with one
// signed by its CA reads and writes; without one, or trusting another CA, it gets nothing.
func TestClientTLS(t *testing.T) {
	dir := t.TempDir()
	ca, err := certs.NewCA("etcd-ca", time.Hour)
	require.NoError(t, err)
	other, err := certs.NewCA("other-ca", time.Hour)
	require.NoError(t, err)
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, data, 0o600))
		return p
	}
	servingCert, servingKey, err := ca.IssueServing("etcd", []string{"127.0.0.1"}, time.Hour)
	require.NoError(t, err)
	clientCert, clientKey, err := ca.IssueClient("core", nil, time.Hour)
	require.NoError(t, err)
	caFile, otherCAFile := write("ca.crt", ca.CertPEM), write("other.crt", other.CertPEM)
	certFile, keyFile := write("client.crt", clientCert), write("client.key", clientKey)

	ports := make([]int, 2)
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		ports[i] = ln.Addr().(*net.TCPAddr).Port
		require.NoError(t, ln.Close())
	}
	cfg := embed.NewConfig()
	cfg.Dir, cfg.LogLevel = filepath.Join(dir, "etcd"), "fatal"
	cu := url.URL{Scheme: "https", Host: fmt.Sprintf("127.0.0.1:%d", ports[0])}
	pu := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[1])}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{cu}, []url.URL{cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{pu}, []url.URL{pu}
	cfg.InitialCluster = cfg.Name + "=" + pu.String()
	cfg.TickMs, cfg.ElectionMs = 10, 100
	cfg.ClientTLSInfo.CertFile = write("serving.crt", servingCert)
	cfg.ClientTLSInfo.KeyFile = write("serving.key", servingKey)
	cfg.ClientTLSInfo.TrustedCAFile = caFile
	cfg.ClientTLSInfo.ClientCertAuth = true
	e, err := embed.StartEtcd(cfg)
	require.NoError(t, err)
	defer e.Close()
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		t.Fatal("etcd not ready")
	}

	use := func(caFile, certFile, keyFile string) error {
		tlsCfg, err := certs.ClientTLSConfig(caFile, certFile, keyFile, "")
		require.NoError(t, err)
		c, err := NewClient([]string{cu.String()}, tlsCfg)
		require.NoError(t, err)
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err = NewStore(c, DefaultPrefix).Create(ctx, "/tls/"+t.Name()+certFile+caFile, []byte("v"))
		if err != nil {
			return err
		}
		_, _, err = NewStore(c, DefaultPrefix).Get(ctx, "/tls/"+t.Name()+certFile+caFile, 0)
		return err
	}
	assert.NoError(t, use(caFile, certFile, keyFile), "with its client certificate")
	// etcd's client waits for a connection that never comes; the write answers before the
	// request's deadline that etcd is unavailable (and cannot tell whether the write left).
	assert.ErrorIs(t, use(caFile, "", ""), ErrOutcomeUnknown, "without a client certificate")
	assert.ErrorIs(t, use(otherCAFile, certFile, keyFile), ErrOutcomeUnknown, "trusting another CA")
}
