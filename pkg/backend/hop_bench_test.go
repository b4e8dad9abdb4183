package backend

import (
	"context"
	"net"
	"testing"

	"github.com/apichain/apichain/pkg/certs"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/test/bufconn"
)

// BenchmarkHop measures the gateway→backend gRPC hop alone (a tiny grpc.health.v1 Check,
// no storage): an in-process connection (bufconn) against loopback TCP, each with and without
// the mutual TLS the gateway and backends use.
func BenchmarkHop(b *testing.B) {
	pki, err := certs.EnsurePKI(b.TempDir(), nil, []string{"apichain-backend"})
	if err != nil {
		b.Fatal(err)
	}
	pool, err := certs.PoolFromFile(pki.CAFile)
	if err != nil {
		b.Fatal(err)
	}
	serverTLS, err := certs.ServerTLSConfig(pki.BackendCertFile, pki.BackendKeyFile, pool, true)
	if err != nil {
		b.Fatal(err)
	}
	clientTLS, err := certs.ClientTLSConfig(pki.CAFile, pki.GatewayClientCertFile, pki.GatewayClientKeyFile, "apichain-backend")
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		tls  bool
		tcp  bool
	}{{"bufconn-plaintext", false, false}, {"bufconn-mtls", true, false}, {"tcp-plaintext", false, true}, {"tcp-mtls", true, true}} {
		b.Run(tc.name, func(b *testing.B) {
			var srvOpts []grpc.ServerOption
			dialCreds := insecure.NewCredentials()
			if tc.tls {
				srvOpts = append(srvOpts, grpc.Creds(credentials.NewTLS(serverTLS.Clone())))
				dialCreds = credentials.NewTLS(clientTLS.Clone())
			}
			srv := grpc.NewServer(srvOpts...)
			healthpb.RegisterHealthServer(srv, health.NewServer())
			var ln net.Listener
			target := "passthrough:///bufnet"
			var dialOpts []grpc.DialOption
			if tc.tcp {
				if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
					b.Fatal(err)
				}
				target = ln.Addr().String()
			} else {
				bl := bufconn.Listen(1 << 20)
				ln = bl
				dialOpts = append(dialOpts, grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return bl.DialContext(ctx) }))
			}
			go func() { _ = srv.Serve(ln) }()
			defer srv.Stop()
			conn, err := grpc.NewClient(target, append(dialOpts, grpc.WithTransportCredentials(dialCreds))...)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			client := healthpb.NewHealthClient(conn)
			ctx := context.Background()
			if _, err := client.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := client.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
