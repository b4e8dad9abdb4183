package e2e

import (
	"context"
	"encoding/json"
	"net"
	"testing"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/certs"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkGatewayVsDirect compares one GET of a ConfigMap through the whole gateway path
// (client-go over HTTPS, filter chain, gRPC hop with mutual TLS, core, etcd) with the same
// GET sent straight to the core backend over gRPC with the gateway's client certificate.
// The difference is the gateway's cost per request. Run: make bench.
func BenchmarkGatewayVsDirect(b *testing.B) {
	c, _ := startAllInOne(b)
	cs := clientset(b, c)
	ctx := context.Background()
	_, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "hop"},
		Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	require.NoError(b, err)

	b.Run("gateway-https", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "hop", metav1.GetOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})

	conn := directCoreConn(b, c)
	client := resourcev1.NewResourceServiceClient(conn)
	req := &resourcev1.GetRequest{Ref: &resourcev1.ResourceRef{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "hop"},
		Encoding: &resourcev1.Encoding{Accept: "application/vnd.kubernetes.protobuf"}}
	b.Run("direct-grpc", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := client.Get(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// directCoreConn dials the core backend the way the gateway does.
func directCoreConn(b testing.TB, c *client) *grpc.ClientConn {
	_, body, _ := c.get("/debug/lifecycle/v1/instances")
	var states struct {
		States []struct {
			Service string `json:"service"`
			Address string `json:"address"`
		} `json:"states"`
	}
	require.NoError(b, json.Unmarshal([]byte(body), &states))
	addr := ""
	for _, s := range states.States {
		if s.Service == "core" {
			addr = s.Address
		}
	}
	require.NotEmpty(b, addr, body)
	_, _, err := net.SplitHostPort(addr)
	require.NoError(b, err)
	pki, err := certs.EnsurePKI(c.data, nil, []string{"apichain-backend"}) // reuses the gateway's
	require.NoError(b, err)
	tlsCfg, err := certs.ClientTLSConfig(pki.CAFile, pki.GatewayClientCertFile, pki.GatewayClientKeyFile, "apichain-backend")
	require.NoError(b, err)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg)))
	require.NoError(b, err)
	b.Cleanup(func() { conn.Close() })
	return conn
}
