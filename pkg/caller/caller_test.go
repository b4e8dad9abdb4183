package caller

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"testing"
	"time"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/audit"
	"github.com/apichain/apichain/pkg/certs"
	"github.com/apichain/apichain/pkg/user"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/protobuf/proto"
)

// testCA is shared by the tests: key generation is the slow part.
var testCA = func() *certs.CA {
	ca, err := certs.NewCA("caller-test-ca", time.Hour)
	if err != nil {
		panic(err)
	}
	return ca
}()

// clientCert issues a client certificate with the given CN and parses it.
func clientCert(t *testing.T, cn string) *x509.Certificate {
	t.Helper()
	certPEM, _, err := testCA.IssueClient(cn, nil, time.Hour)
	require.NoError(t, err)
	block, _ := pem.Decode(certPEM)
	require.NotNil(t, block)
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	return cert
}

// withTLSPeer returns ctx carrying a gRPC peer whose TLS state has the given verified chains.
func withTLSPeer(ctx context.Context, chains [][]*x509.Certificate) context.Context {
	return peer.NewContext(ctx, &peer.Peer{
		Addr:     &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000},
		AuthInfo: credentials.TLSInfo{State: tls.ConnectionState{VerifiedChains: chains}},
	})
}

// plainAuth is a non-TLS AuthInfo, like the insecure credentials'.
type plainAuth struct{}

func (plainAuth) AuthType() string { return "insecure" }

func gatewayPeer(t *testing.T) context.Context {
	return withTLSPeer(context.Background(), [][]*x509.Certificate{{clientCert(t, certs.GatewayUser), testCA.Cert}})
}

// incomingFromOutgoing moves outgoing metadata to the incoming side, as the transport does.
func incomingFromOutgoing(t *testing.T, out, base context.Context) context.Context {
	t.Helper()
	md, ok := metadata.FromOutgoingContext(out)
	require.True(t, ok, "Outgoing must attach outgoing metadata")
	return metadata.NewIncomingContext(base, md)
}

func testCaller() *resourcev1.Caller {
	return &resourcev1.Caller{
		Name:    "alice",
		Uid:     "uid-1",
		Groups:  []string{"system:authenticated", "devs"},
		Extra:   map[string]*resourcev1.ExtraValues{"scopes": {Values: []string{"a", "b"}}},
		AuditId: "audit-123",
	}
}

func TestOutgoingFromIncomingRoundTrip(t *testing.T) {
	want := testCaller()
	out := Outgoing(context.Background(), want)

	md, _ := metadata.FromOutgoingContext(out)
	require.Len(t, md.Get(MetadataKey), 1)

	got, err := FromIncoming(incomingFromOutgoing(t, out, gatewayPeer(t)))
	require.NoError(t, err)
	require.NotNil(t, got)
	assert.True(t, proto.Equal(want, got), "got %v, want %v", got, want)
}

func TestOutgoingKeepsExistingMetadata(t *testing.T) {
	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-other", "v")
	md, _ := metadata.FromOutgoingContext(Outgoing(ctx, testCaller()))
	assert.Equal(t, []string{"v"}, md.Get("x-other"))
	assert.Len(t, md.Get(MetadataKey), 1)
}

func TestIsGateway(t *testing.T) {
	gw := clientCert(t, certs.GatewayUser)
	admin := clientCert(t, certs.AdminUser)
	tests := []struct {
		name string
		ctx  func() context.Context
		want bool
	}{
		{"no peer", context.Background, false},
		{"peer without auth info", func() context.Context {
			return peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{}})
		}, false},
		{"non-TLS peer", func() context.Context {
			return peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{}, AuthInfo: plainAuth{}})
		}, false},
		{"TLS without verified chains", func() context.Context {
			return withTLSPeer(context.Background(), nil)
		}, false},
		{"TLS with an empty chain", func() context.Context {
			return withTLSPeer(context.Background(), [][]*x509.Certificate{{}})
		}, false},
		{"unverified gateway cert is not enough", func() context.Context {
			return peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{},
				AuthInfo: credentials.TLSInfo{State: tls.ConnectionState{PeerCertificates: []*x509.Certificate{gw}}}})
		}, false},
		{"admin leaf", func() context.Context {
			return withTLSPeer(context.Background(), [][]*x509.Certificate{{admin, testCA.Cert}})
		}, false},
		{"gateway CN only on the CA, not the leaf", func() context.Context {
			ca, err := certs.NewCA(certs.GatewayUser, time.Hour)
			require.NoError(t, err)
			return withTLSPeer(context.Background(), [][]*x509.Certificate{{admin, ca.Cert}})
		}, false},
		{"gateway leaf", func() context.Context {
			return withTLSPeer(context.Background(), [][]*x509.Certificate{{gw, testCA.Cert}})
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, IsGateway(tt.ctx()))
		})
	}
}

func TestFromIncoming(t *testing.T) {
	admin := clientCert(t, certs.AdminUser)
	adminPeer := withTLSPeer(context.Background(), [][]*x509.Certificate{{admin, testCA.Cert}})
	valid, err := proto.Marshal(testCaller())
	require.NoError(t, err)

	tests := []struct {
		name     string
		ctx      context.Context
		wantErr  error
		anyErr   bool
		wantNil  bool
		wantName string
	}{
		{name: "no metadata at all", ctx: gatewayPeer(t), wantNil: true},
		{name: "metadata without identity", ctx: metadata.NewIncomingContext(gatewayPeer(t), metadata.Pairs("x-other", "v")), wantNil: true},
		{name: "no metadata from an untrusted peer", ctx: adminPeer, wantNil: true},
		{name: "identity from a non-gateway peer", ctx: metadata.NewIncomingContext(adminPeer, metadata.Pairs(MetadataKey, string(valid))),
			wantErr: ErrUntrustedPeer, wantNil: true},
		{name: "identity without any peer", ctx: metadata.NewIncomingContext(context.Background(), metadata.Pairs(MetadataKey, string(valid))),
			wantErr: ErrUntrustedPeer, wantNil: true},
		{name: "garbage from the gateway", ctx: metadata.NewIncomingContext(gatewayPeer(t), metadata.Pairs(MetadataKey, "\xff\xff\xff")),
			anyErr: true, wantNil: true},
		{name: "identity from the gateway", ctx: metadata.NewIncomingContext(gatewayPeer(t), metadata.Pairs(MetadataKey, string(valid))),
			wantName: "alice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FromIncoming(tt.ctx)
			switch {
			case tt.wantErr != nil:
				require.ErrorIs(t, err, tt.wantErr)
			case tt.anyErr:
				require.Error(t, err)
			default:
				require.NoError(t, err)
			}
			if tt.wantNil {
				assert.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			assert.Equal(t, tt.wantName, got.GetName())
		})
	}
}

func TestIncomingPutsTheCallerInTheContext(t *testing.T) {
	// What the gateway's filters established...
	ctx := audit.WithID(context.Background(), "audit-123")
	ctx = user.WithUser(ctx, &user.User{Name: "alice", UID: "uid-1", Groups: []string{"devs"}, Extra: map[string][]string{"scopes": {"a", "b"}}})
	out := Outgoing(context.Background(), ForRequest(ctx))

	// ...is what a backend's handler finds.
	in, err := Incoming(incomingFromOutgoing(t, out, gatewayPeer(t)))
	require.NoError(t, err)
	u, ok := user.From(in)
	require.True(t, ok)
	assert.Equal(t, &user.User{Name: "alice", UID: "uid-1", Groups: []string{"devs"}, Extra: map[string][]string{"scopes": {"a", "b"}}}, u)
	assert.Equal(t, "audit-123", audit.IDFrom(in))

	// Without identity metadata there is no user; from another peer, an error.
	in, err = Incoming(gatewayPeer(t))
	require.NoError(t, err)
	_, ok = user.From(in)
	assert.False(t, ok)
	admin := withTLSPeer(context.Background(), [][]*x509.Certificate{{clientCert(t, certs.AdminUser), testCA.Cert}})
	_, err = Incoming(incomingFromOutgoing(t, out, admin))
	require.ErrorIs(t, err, ErrUntrustedPeer)
}
