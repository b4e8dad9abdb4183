package backend

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	discoveryv1 "github.com/apichain/apichain/gen/apichain/discovery/v1"
	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/audit"
	"github.com/apichain/apichain/pkg/caller"
	"github.com/apichain/apichain/pkg/certs"
	"github.com/apichain/apichain/pkg/embedded"
	"github.com/apichain/apichain/pkg/lifecycle"
	"github.com/apichain/apichain/pkg/registry"
	"github.com/apichain/apichain/pkg/rpcstatus"
	"github.com/apichain/apichain/pkg/server"
	"github.com/apichain/apichain/pkg/storage"
	"github.com/apichain/apichain/pkg/topology"
	"github.com/apichain/apichain/pkg/user"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func discardLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// startBackend runs a real backend in-process: mutual TLS from a fresh PKI, an embedded NATS
// for its lifecycle publisher and an embedded etcd for its storage-readiness hook. It stops
// the backend when the test ends.
func startBackend(t *testing.T) (*Backend, *certs.PKI) {
	t.Helper()
	pki, err := certs.EnsurePKI(t.TempDir(), nil, []string{"apichain-backend"})
	require.NoError(t, err)

	nats, err := embedded.StartNATS(t.TempDir(), "127.0.0.1", 0)
	require.NoError(t, err)
	t.Cleanup(nats.Stop)

	etcd, err := embedded.StartEtcd(context.Background(), t.TempDir(), 0, 0)
	require.NoError(t, err)
	t.Cleanup(etcd.Stop)

	opts := NewOptions("core")
	opts.Lifecycle.InstanceID = "test-1"
	opts.BindAddress = "127.0.0.1:0"
	opts.Serving = certs.ServingOptions{CertFile: pki.BackendCertFile, KeyFile: pki.BackendKeyFile, ClientCAFile: pki.CAFile}
	opts.EtcdServers = etcd.Endpoints()
	opts.Generic.ShutdownTimeout = 10 * time.Second
	require.NoError(t, opts.Validate())
	nc, err := lifecycle.Connect(nats.URL(), t.Name())
	require.NoError(t, err)
	t.Cleanup(nc.Close)

	b, err := New(opts, []*discoveryv1.GroupVersion{{Version: "v1"}, {Group: "apps", Version: "v1"}}, nc, discardLog())
	require.NoError(t, err)
	assert.Regexp(t, `^127\.0\.0\.1:\d+$`, b.Address())

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Error("backend did not stop within 30s")
		}
	})
	return b, pki
}

func dialBackend(t *testing.T, b *Backend, tlsCfg *tls.Config) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(b.Address(), grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func clientTLS(t *testing.T, pki *certs.PKI, certFile, keyFile string) *tls.Config {
	t.Helper()
	cfg, err := certs.ClientTLSConfig(pki.CAFile, certFile, keyFile, "apichain-backend")
	require.NoError(t, err)
	return cfg
}

func rpcCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestBackendMutualTLSAndIdentity(t *testing.T) {
	b, pki := startBackend(t)

	t.Run("gateway client cert", func(t *testing.T) {
		conn := dialBackend(t, b, clientTLS(t, pki, pki.GatewayClientCertFile, pki.GatewayClientKeyFile))

		health := healthpb.NewHealthClient(conn)
		hr, err := health.Check(rpcCtx(t), &healthpb.HealthCheckRequest{})
		require.NoError(t, err)
		assert.Contains(t, []healthpb.HealthCheckResponse_ServingStatus{
			healthpb.HealthCheckResponse_NOT_SERVING, healthpb.HealthCheckResponse_SERVING}, hr.GetStatus())
		// Readiness (storage-readiness against etcd) is mirrored into grpc.health.v1.
		for _, svc := range []string{"", "core"} {
			require.Eventually(t, func() bool {
				hr, err := health.Check(rpcCtx(t), &healthpb.HealthCheckRequest{Service: svc})
				return err == nil && hr.GetStatus() == healthpb.HealthCheckResponse_SERVING
			}, 20*time.Second, 20*time.Millisecond, "service %q", svc)
		}

		// With identity metadata, as the gateway sends it.
		ctx := caller.Outgoing(rpcCtx(t), &resourcev1.Caller{Name: "alice", Groups: []string{"devs"}})
		doc, err := discoveryv1.NewDiscoveryServiceClient(conn).GetDocument(ctx, &discoveryv1.GetDocumentRequest{Path: "/api"})
		require.NoError(t, err)
		assert.Contains(t, string(doc.GetData()), `"kind":"APIVersions"`)

		// No resources installed: every resource request is "not served".
		_, err = resourcev1.NewResourceServiceClient(conn).Get(ctx, &resourcev1.GetRequest{
			Ref: &resourcev1.ResourceRef{Version: "v1", Resource: "pods", Namespace: "default", Name: "p"}})
		assert.Equal(t, codes.Unimplemented, status.Code(err), "err = %v", err)
	})

	t.Run("admin cert with identity metadata is rejected", func(t *testing.T) {
		conn := dialBackend(t, b, clientTLS(t, pki, pki.AdminCertFile, pki.AdminKeyFile))
		ctx := caller.Outgoing(rpcCtx(t), &resourcev1.Caller{Name: "system:admin", Groups: []string{"system:masters"}})

		_, err := discoveryv1.NewDiscoveryServiceClient(conn).GetDocument(ctx, &discoveryv1.GetDocumentRequest{Path: "/apis"})
		assert.Equal(t, codes.PermissionDenied, status.Code(err), "err = %v", err)

		_, err = healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
		assert.Equal(t, codes.PermissionDenied, status.Code(err), "err = %v", err)

		// Streams go through the same rule.
		stream, err := resourcev1.NewResourceServiceClient(conn).Watch(ctx, &resourcev1.WatchRequest{
			Ref: &resourcev1.ResourceRef{Version: "v1", Resource: "pods"}})
		if err == nil {
			_, err = stream.Recv()
		}
		assert.Equal(t, codes.PermissionDenied, status.Code(err), "err = %v", err)
	})

	t.Run("no client cert fails the handshake", func(t *testing.T) {
		conn := dialBackend(t, b, clientTLS(t, pki, "", ""))
		_, err := healthpb.NewHealthClient(conn).Check(rpcCtx(t), &healthpb.HealthCheckRequest{})
		require.Error(t, err)
		assert.Equal(t, codes.Unavailable, status.Code(err), "err = %v", err)
	})

	t.Run("client cert from another CA fails the handshake", func(t *testing.T) {
		other, err := certs.EnsurePKI(t.TempDir(), nil, nil)
		require.NoError(t, err)
		cfg := clientTLS(t, pki, other.GatewayClientCertFile, other.GatewayClientKeyFile)
		conn := dialBackend(t, b, cfg)
		_, err = healthpb.NewHealthClient(conn).Check(rpcCtx(t), &healthpb.HealthCheckRequest{})
		require.Error(t, err)
		assert.Equal(t, codes.Unavailable, status.Code(err), "err = %v", err)
	})

	t.Run("TLS 1.2 handshakes", func(t *testing.T) { checkHandshakes(t, b, pki) })
}

// checkHandshakes checks the handshake itself. TLS 1.2 makes the server's verdict on the
// client certificate part of the client's handshake (with 1.3 it arrives after it).
func checkHandshakes(t *testing.T, b *Backend, pki *certs.PKI) {
	other, err := certs.EnsurePKI(t.TempDir(), nil, nil)
	require.NoError(t, err)

	tests := []struct {
		name              string
		ca, cert, key     string
		wantHandshakeFail bool
	}{
		{"gateway cert", pki.CAFile, pki.GatewayClientCertFile, pki.GatewayClientKeyFile, false},
		{"admin cert (same CA)", pki.CAFile, pki.AdminCertFile, pki.AdminKeyFile, false},
		{"no cert", pki.CAFile, "", "", true},
		{"cert from another CA", pki.CAFile, other.GatewayClientCertFile, other.GatewayClientKeyFile, true},
		{"server not trusted by the client", other.CAFile, pki.GatewayClientCertFile, pki.GatewayClientKeyFile, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := certs.ClientTLSConfig(tt.ca, tt.cert, tt.key, "apichain-backend")
			require.NoError(t, err)
			cfg.MaxVersion = tls.VersionTLS12
			cfg.NextProtos = []string{"h2"}
			d := &net.Dialer{Timeout: 10 * time.Second}
			conn, err := tls.DialWithDialer(d, "tcp", b.Address(), cfg)
			if tt.wantHandshakeFail {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "h2", conn.ConnectionState().NegotiatedProtocol)
			_ = conn.Close()
		})
	}
}

// TestAdmit covers the interceptor's bookkeeping without a network.
func TestAdmit(t *testing.T) {
	b := &Backend{Server: server.New("core", server.DefaultOptions(), discardLog())}
	ctx := peerWithCN(t, certs.GatewayUser)

	_, _, err := b.admit(peerWithCN(t, "kubernetes-admin"), "/apichain.resource.v1.ResourceService/Get")
	assert.Equal(t, codes.PermissionDenied, status.Code(err), "only the gateway may call")
	_, _, err = b.admit(context.Background(), "/apichain.discovery.v1.DiscoveryService/GetDocument")
	assert.Equal(t, codes.PermissionDenied, status.Code(err), "a peer without a certificate may not call")
	_, done, err := b.admit(peerWithCN(t, "kubernetes-admin"), "/grpc.health.v1.Health/Check")
	require.NoError(t, err, "health probes are public")
	done()

	// Another backend reads the kinds this one owns, and does nothing else, as itself.
	backendPeer := peerWithCN(t, topology.BackendServerName)
	for _, m := range []string{"Get", "List", "Watch"} {
		_, done, err := b.admit(backendPeer, "/apichain.resource.v1.ResourceService/"+m)
		require.NoError(t, err, "a backend may %s", m)
		done()
	}
	for _, m := range []string{"/apichain.resource.v1.ResourceService/Create", "/apichain.resource.v1.ResourceService/Delete",
		"/apichain.resource.v1.ResourceService/Patch", "/apichain.discovery.v1.DiscoveryService/GetDocument"} {
		_, _, err := b.admit(backendPeer, m)
		assert.Equal(t, codes.PermissionDenied, status.Code(err), "a backend may not call %s", m)
	}
	_, _, err = b.admit(metadata.NewIncomingContext(backendPeer, metadata.Pairs(caller.MetadataKey, "x")), "/apichain.resource.v1.ResourceService/Get")
	assert.Equal(t, codes.PermissionDenied, status.Code(err), "a backend may not speak for a user")

	ctx2, done, err := b.admit(ctx, "/apichain.resource.v1.ResourceService/Get")
	require.NoError(t, err)
	_, ok := user.From(ctx2)
	assert.False(t, ok, "no user without identity metadata")
	done()

	b.Server.InFlight.Close()
	_, _, err = b.admit(ctx, "/apichain.resource.v1.ResourceService/Get")
	assert.Equal(t, codes.Unavailable, status.Code(err), "new requests are refused once draining")

	_, done, err = b.admit(ctx, "/apichain.resource.v1.ResourceService/Watch")
	require.NoError(t, err, "long-running requests are not counted")
	done()
}

func TestAdvertise(t *testing.T) {
	orig := osHostname
	t.Cleanup(func() { osHostname = orig })
	osHostname = func() (string, error) { return "node-a", nil }

	tests := []struct {
		configured string
		bound      net.Addr
		want       string
	}{
		{"core.example:9090", &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 1}, "core.example:9090"},
		{"", &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 9090}, "10.0.0.1:9090"},
		{"", &net.TCPAddr{IP: net.IPv6loopback, Port: 9090}, "[::1]:9090"},
		{"", &net.TCPAddr{IP: net.IPv4zero, Port: 9090}, "node-a:9090"},
		{"", &net.TCPAddr{IP: net.IPv6unspecified, Port: 9090}, "node-a:9090"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			assert.Equal(t, tt.want, advertise(tt.configured, tt.bound))
		})
	}

	osHostname = func() (string, error) { return "", io.EOF }
	assert.Equal(t, "127.0.0.1:9090", advertise("", &net.TCPAddr{IP: net.IPv4zero, Port: 9090}))
}

// peerWithCN is a gRPC peer context whose verified client certificate has CN cn.
func peerWithCN(t *testing.T, cn string) context.Context {
	t.Helper()
	ca, err := certs.NewCA("test-ca", time.Hour)
	require.NoError(t, err)
	certPEM, _, err := ca.IssueClient(cn, nil, time.Hour)
	require.NoError(t, err)
	block, _ := pem.Decode(certPEM)
	leaf, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	info := credentials.TLSInfo{State: tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{leaf, ca.Cert}}}}
	return peer.NewContext(context.Background(), &peer.Peer{AuthInfo: info})
}

// A panicking handler answers that request with a 500 Status; the backend keeps serving.
func TestPanicRecovery(t *testing.T) {
	b := &Backend{Server: server.New("core", server.DefaultOptions(), discardLog()), Log: discardLog()}
	ctx := peerWithCN(t, certs.GatewayUser)
	info := &grpc.UnaryServerInfo{FullMethod: "/apichain.resource.v1.ResourceService/Patch"}
	_, err := b.unaryInterceptor(ctx, nil, info, func(context.Context, any) (any, error) { panic("boom") })
	require.Error(t, err)
	st := rpcstatus.ToKube(err)
	assert.EqualValues(t, 500, st.Code)
	assert.Contains(t, st.Message, "panic")

	resp, err := b.unaryInterceptor(ctx, nil, info, func(context.Context, any) (any, error) { return "fine", nil })
	require.NoError(t, err)
	assert.Equal(t, "fine", resp)
}

// Handlers find the user and audit ID the gateway sent, and the backend's log names them, so
// a request can be followed from the gateway's log.
func TestHandlersSeeTheCaller(t *testing.T) {
	var logs strings.Builder
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	b := &Backend{Server: server.New("core", server.DefaultOptions(), log), Log: log}
	out := caller.Outgoing(context.Background(), &resourcev1.Caller{Name: "alice", Groups: []string{"devs"}, AuditId: "audit-7"})
	md, _ := metadata.FromOutgoingContext(out)
	ctx := metadata.NewIncomingContext(peerWithCN(t, certs.GatewayUser), md)

	info := &grpc.UnaryServerInfo{FullMethod: "/apichain.resource.v1.ResourceService/Create"}
	_, err := b.unaryInterceptor(ctx, nil, info, func(ctx context.Context, _ any) (any, error) {
		u, ok := user.From(ctx)
		require.True(t, ok)
		assert.Equal(t, &user.User{Name: "alice", Groups: []string{"devs"}}, u)
		assert.Equal(t, "audit-7", audit.IDFrom(ctx))
		panic("boom")
	})
	require.Error(t, err)
	assert.Contains(t, logs.String(), `msg="request handler panicked" method=/apichain.resource.v1.ResourceService/Create user=alice auditID=audit-7`)
	assert.Contains(t, logs.String(), `msg=request method=/apichain.resource.v1.ResourceService/Create user=alice auditID=audit-7 code=Internal`)
}

func TestEtcdTLSOptions(t *testing.T) {
	pki, err := certs.EnsurePKI(t.TempDir(), nil, []string{"apichain-backend"})
	require.NoError(t, err)
	opts := NewOptions("core")
	opts.Serving = certs.ServingOptions{CertFile: pki.BackendCertFile, KeyFile: pki.BackendKeyFile, ClientCAFile: pki.CAFile}
	cfg, err := opts.EtcdTLS()
	require.NoError(t, err)
	assert.Nil(t, cfg, "no flag: plain etcd")

	opts.EtcdCertFile = pki.BackendCertFile
	assert.ErrorContains(t, opts.Validate(), "--etcd-certfile and --etcd-keyfile must be given together")
	opts.EtcdKeyFile, opts.EtcdCAFile = pki.BackendKeyFile, pki.CAFile
	require.NoError(t, opts.Validate())
	cfg, err = opts.EtcdTLS()
	require.NoError(t, err)
	require.NotNil(t, cfg.GetClientCertificate, "the client certificate, reloaded when its files change")
	cert, err := cfg.GetClientCertificate(nil)
	require.NoError(t, err)
	assert.Equal(t, "apichain-backend", cert.Leaf.Subject.CommonName)
	assert.NotNil(t, cfg.RootCAs)
}

// A backend's storage touches the kinds its ResourceService stores, as they change, and the
// keys it claims; nothing of another service's.
func TestStorageOwnsOnlyWhatTheBackendServes(t *testing.T) {
	scheme, err := registry.NewScheme(corev1.AddToScheme)
	require.NoError(t, err)
	configMaps := &registry.Resource{GroupVersion: corev1.SchemeGroupVersion, Name: "configmaps", Kind: "ConfigMap", Namespaced: true,
		New: func() runtime.Object { return &corev1.ConfigMap{} }, NewList: func() runtime.Object { return &corev1.ConfigMapList{} }}
	services := &registry.Resource{GroupVersion: corev1.SchemeGroupVersion, Name: "services", Kind: "Service", Namespaced: true,
		New: func() runtime.Object { return &corev1.Service{} }, NewList: func() runtime.Object { return &corev1.ServiceList{} }}
	b := &Backend{Log: discardLog()}
	h := registry.NewHandler(scheme, registry.NewSet(configMaps, services), new(storage.Store), nil)
	b.SetResources(h)
	b.ClaimKeys("/apichain/nodeports/")

	// Keys are under the etcd prefix, in kube's layout.
	for key, want := range map[string]bool{
		"/configmaps/ns/x":           true,
		"/configmaps/":               true, // a list or watch of all of them
		"/configmaps/ns/":            true,
		"/services/specs/ns/x":       true,
		"/services/specs/":           true,
		"/apichain/nodeports/30000":  true,
		"/namespaces/x":              false, // core's, not this backend's
		"/configmapsx/ns/x":          false,
		"/services/endpoints/ns/x":   false,
		"/services/":                 false, // two resources' keys
		"/":                          false, // everything
		"/apiextensions.k8s.io/crds": false,
		"/core/configmaps/ns/x":      false, // an earlier apichain's layout
	} {
		assert.Equal(t, want, b.owns(key), key)
	}
	gr, ok := b.resourceOf("/services/specs/ns/x")
	assert.True(t, ok)
	assert.Equal(t, "services", gr.Resource)
	h.SetResources(registry.NewSet())
	assert.False(t, b.owns("/configmaps/ns/x"), "a kind no longer served is no longer owned")
}

// A service refuses an etcd an earlier apichain wrote in its own layout, naming the command
// that moves it; one whose etcd answers late keeps its store closed until it knows, and an
// all-in-one's backend moves it first (MigrateLayout), then serves.
func TestEarlierStorageLayout(t *testing.T) {
	pki, err := certs.EnsurePKI(t.TempDir(), nil, []string{"apichain-backend"})
	require.NoError(t, err)
	etcd, err := embedded.StartEtcd(context.Background(), t.TempDir(), 0, 0)
	require.NoError(t, err)
	t.Cleanup(etcd.Stop)
	c, err := storage.NewClient(etcd.Endpoints(), nil)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Put(context.Background(), "/registry/core/namespaces/default", `{"apiVersion":"v1","kind":"Namespace"}`)
	require.NoError(t, err)

	opts := NewOptions("core")
	opts.BindAddress = "127.0.0.1:0"
	opts.Serving = certs.ServingOptions{CertFile: pki.BackendCertFile, KeyFile: pki.BackendKeyFile, ClientCAFile: pki.CAFile}
	opts.EtcdServers = etcd.Endpoints()
	_, err = New(opts, nil, nil, discardLog())
	require.ErrorIs(t, err, registry.ErrLegacyLayout)
	assert.Contains(t, err.Error(), `run "apichain storage migrate --etcd-servers `+etcd.Endpoints()[0])

	moved := make(chan struct{})
	opts.MigrateLayout = func(ctx context.Context, c *clientv3.Client) error {
		_, err := c.Delete(ctx, "/registry/core/", clientv3.WithPrefix())
		close(moved)
		return err
	}
	b, err := New(opts, nil, nil, discardLog())
	require.NoError(t, err)
	defer b.close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, b.Store().WaitOpen(ctx), "open once moved")
	select {
	case <-moved:
	default:
		t.Fatal("the store opened before the layout was moved")
	}
}
