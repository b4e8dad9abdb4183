// Package client is a Go client of apichain's gRPC API on the gateway's port: it dials with a
// kubeconfig or a client-go rest.Config (the same TLS, client certificate, bearer token and
// impersonation as a REST client), and works on resources with k8s.io/apimachinery objects,
// typed or unstructured. Its errors are *apierrors.StatusError, so apierrors.IsNotFound and
// the like work as with client-go.
//
//	c, err := client.FromKubeconfig("")
//	configmaps := client.For[corev1.ConfigMap, corev1.ConfigMapList](c, corev1.SchemeGroupVersion.WithResource("configmaps")).Namespace("default")
//	cm, err := configmaps.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{})
package client

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"strings"

	"golang.org/x/oauth2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/transport"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
)

// DefaultUserAgent names the client when the config does not: the default field manager of
// its writes is the part before the "/".
const DefaultUserAgent = "apichain-client/v1"

// Client is a connection to the gateway.
type Client struct {
	conn      *grpc.ClientConn
	resources resourcev1.ResourceServiceClient
}

// FromKubeconfig dials the current context of the kubeconfig at path ("" loads it as kubectl
// does: $KUBECONFIG, then ~/.kube/config).
func FromKubeconfig(path string, opts ...grpc.DialOption) (*Client, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, err
	}
	return New(cfg, opts...)
}

// New dials the gateway cfg names: its host, TLS (CA, client certificate, server name,
// insecure), bearer token (or token file, re-read as client-go does), impersonation and user
// agent. Credential plugins and auth providers are not supported.
func New(cfg *rest.Config, opts ...grpc.DialOption) (*Client, error) {
	if cfg.ExecProvider != nil || cfg.AuthProvider != nil {
		return nil, errors.New("apichain client: exec credential plugins and auth providers are not supported")
	}
	target, err := hostPort(cfg.Host)
	if err != nil {
		return nil, err
	}
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, err
	}
	if tlsConfig == nil {
		return nil, fmt.Errorf("apichain client: %s is not served over TLS", cfg.Host)
	}
	ua := cfg.UserAgent
	if ua == "" {
		ua = DefaultUserAgent
	}
	dial := []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(tlsConfig)), grpc.WithUserAgent(ua),
		// A list is one message, as large as the collection: no limit but protobuf's.
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(math.MaxInt32)),
		// HTTP/2 windows as Go's HTTP/2 client (client-go) opens them: a large answer streams in
		// without waiting for the window to grow.
		grpc.WithInitialWindowSize(4 << 20), grpc.WithInitialConnWindowSize(1 << 30)}
	switch {
	case cfg.BearerTokenFile != "":
		dial = append(dial, grpc.WithPerRPCCredentials(bearer{transport.NewCachedFileTokenSource(cfg.BearerTokenFile)}))
	case cfg.BearerToken != "":
		dial = append(dial, grpc.WithPerRPCCredentials(bearer{oauth2.StaticTokenSource(&oauth2.Token{AccessToken: cfg.BearerToken})}))
	}
	headers, err := impersonation(cfg.Impersonate)
	if err != nil {
		return nil, err
	}
	if len(headers) > 0 {
		dial = append(dial, grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			return invoker(metadata.AppendToOutgoingContext(ctx, headers...), method, req, reply, cc, opts...)
		}), grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			return streamer(metadata.AppendToOutgoingContext(ctx, headers...), desc, cc, method, opts...)
		}))
	}
	conn, err := grpc.NewClient(target, append(dial, opts...)...)
	if err != nil {
		return nil, err
	}
	return &Client{conn: conn, resources: resourcev1.NewResourceServiceClient(conn)}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Conn is the connection, for the other services on it with their generated clients
// (discoveryv1.NewDiscoveryServiceClient, lifecycle, health).
func (c *Client) Conn() *grpc.ClientConn { return c.conn }

func hostPort(host string) (string, error) {
	u, err := url.Parse(host)
	if err != nil || u.Host == "" { // a bare host[:port]
		u, err = url.Parse("https://" + host)
	}
	if err != nil {
		return "", fmt.Errorf("apichain client: host %q: %w", host, err)
	}
	if u.Scheme != "https" {
		return "", fmt.Errorf("apichain client: host %q: the gateway is reached over https", host)
	}
	if u.Port() == "" {
		return net.JoinHostPort(u.Hostname(), "443"), nil
	}
	return u.Host, nil
}

// impersonation is kube's Impersonate-* headers, as gRPC metadata (key, value pairs).
func impersonation(imp rest.ImpersonationConfig) ([]string, error) {
	var kv []string
	if imp.UserName != "" {
		kv = append(kv, transport.ImpersonateUserHeader, imp.UserName)
	}
	if imp.UID != "" {
		kv = append(kv, transport.ImpersonateUIDHeader, imp.UID)
	}
	for _, g := range imp.Groups {
		kv = append(kv, transport.ImpersonateGroupHeader, g)
	}
	for k, vs := range imp.Extra {
		// An HTTP client escapes other characters in the header's name, which gRPC metadata
		// keys cannot carry.
		if strings.Trim(strings.ToLower(k), "abcdefghijklmnopqrstuvwxyz0123456789-_.") != "" {
			return nil, fmt.Errorf("apichain client: impersonated extra key %q: only letters, digits, '-', '_' and '.' fit in gRPC metadata", k)
		}
		for _, v := range vs {
			kv = append(kv, transport.ImpersonateUserExtraHeaderPrefix+k, v)
		}
	}
	return kv, nil
}

// bearer sends a bearer token with every call.
type bearer struct{ tokens oauth2.TokenSource }

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	tok, err := b.tokens.Token()
	if err != nil {
		return nil, err
	}
	return map[string]string{"authorization": "Bearer " + tok.AccessToken}, nil
}

func (bearer) RequireTransportSecurity() bool { return true }
