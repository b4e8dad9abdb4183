package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apichain/apichain/pkg/certs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// reissue replaces a serving certificate's files with a new one from the CA, for the same
// names, each file atomically (key first, as a renewal would), and returns its serial.
func reissue(t *testing.T, pki, certFile, keyFile string, peer bool) string {
	t.Helper()
	ca, err := certs.LoadCA(filepath.Join(pki, "ca.crt"), filepath.Join(pki, "ca.key"))
	require.NoError(t, err)
	old := readCert(t, certFile)
	hosts := append([]string(nil), old.DNSNames...)
	for _, ip := range old.IPAddresses {
		hosts = append(hosts, ip.String())
	}
	issue := ca.IssueServing
	if peer {
		issue = ca.IssuePeer
	}
	certPEM, keyPEM, err := issue(old.Subject.CommonName, hosts, 24*time.Hour)
	require.NoError(t, err)
	for _, f := range []struct {
		path string
		data []byte
	}{{keyFile, keyPEM}, {certFile, certPEM}} {
		tmp := f.path + ".new"
		require.NoError(t, os.WriteFile(tmp, f.data, 0o600))
		require.NoError(t, os.Rename(tmp, f.path))
	}
	return readCert(t, certFile).SerialNumber.String()
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(path, path[:len(path)-len(".crt")]+".key")
	require.NoError(t, err)
	return pair.Leaf
}

// presented is the serial of the certificate a new TLS connection to addr sees (with the
// client certificate given, for servers that require one).
func presented(t *testing.T, addr string, clientCert *tls.Certificate) string {
	t.Helper()
	cfg := &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12} //nolint:gosec // only reads the certificate
	if clientCert != nil {
		cfg.Certificates = []tls.Certificate{*clientCert}
	}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	require.NoError(t, err)
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

// Replacing the gateway's serving certificate and the backends' certificate files while
// clients are connected: new connections present the new certificates within seconds, the
// connections already open (a watch, the gateway's gRPC connections) carry on, and no
// request fails.
func TestCertificatesRotateWithoutRestart(t *testing.T) {
	c, _ := startAllInOne(t)
	pki := filepath.Join(c.data, "pki")
	cs, err := kubernetes.NewForConfig(c.config)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// A watch opened before, and kept through the rotation.
	w, err := cs.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	defer w.Stop()
	// Load: creates and gets, each on new and reused connections.
	var failed, done atomic.Int64
	var wg sync.WaitGroup
	var firstErr atomic.Value
	for worker := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				name := fmt.Sprintf("rot-%d-%d", worker, i)
				_, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
				if err == nil {
					_, err = cs.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{})
				}
				if err != nil && ctx.Err() == nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
				done.Add(1)
			}
		}()
	}

	gateway := c.config.Host[len("https://"):]
	backend := coreAddress(t, c)
	gatewayClient, err := tls.LoadX509KeyPair(filepath.Join(pki, "gateway-client.crt"), filepath.Join(pki, "gateway-client.key"))
	require.NoError(t, err)
	oldGateway, oldBackend := presented(t, gateway, nil), presented(t, backend, &gatewayClient)

	newGateway := reissue(t, pki, filepath.Join(pki, "serving.crt"), filepath.Join(pki, "serving.key"), false)
	newBackend := reissue(t, pki, filepath.Join(pki, "backend.crt"), filepath.Join(pki, "backend.key"), true)
	require.NotEqual(t, oldGateway, newGateway)
	require.NotEqual(t, oldBackend, newBackend)
	require.Eventually(t, func() bool {
		return presented(t, gateway, nil) == newGateway && presented(t, backend, &gatewayClient) == newBackend
	}, 15*time.Second, 100*time.Millisecond, "new connections present the new certificates")

	// The load runs on a while with the new certificates, then stops.
	before := done.Load()
	require.Eventually(t, func() bool { return done.Load() > before+50 }, 30*time.Second, 50*time.Millisecond)
	cancel()
	wg.Wait()
	assert.Zero(t, failed.Load(), "no request failed (first: %v)", firstErr.Load())
	t.Logf("%d requests across the rotation, %d failed", done.Load(), failed.Load())
	// The watch opened before the rotation saw the creates made after it.
	seen := 0
	timeout := time.After(10 * time.Second)
	for seen == 0 {
		select {
		case ev, ok := <-w.ResultChan():
			require.True(t, ok, "the watch carried on")
			if ev.Type == watch.Added {
				seen++
			}
		case <-timeout:
			t.Fatal("the watch opened before the rotation delivers events")
		}
	}
}

// coreAddress is core's gRPC address, from the lifecycle states.
func coreAddress(t *testing.T, c *client) string {
	t.Helper()
	code, body, _ := c.get("/debug/lifecycle/v1/instances")
	require.Equal(t, 200, code, body)
	var states struct {
		States []struct{ Service, Address string }
	}
	require.NoError(t, json.Unmarshal([]byte(body), &states))
	for _, s := range states.States {
		if s.Service == "core" {
			return s.Address
		}
	}
	t.Fatalf("no core instance in %s", body)
	return ""
}
