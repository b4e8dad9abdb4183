// Package caller carries the authenticated user from the gateway to the backends in gRPC
// metadata; backends read it only from a peer that proved to be the gateway.
package caller

import (
	"context"
	"crypto/x509"
	"errors"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/protobuf/proto"
)

// MetadataKey is the binary metadata key of the serialized Caller.
const MetadataKey = "apichain-caller-bin"

// GatewayCommonName is the client certificate CN the gateway presents to backends.
const GatewayCommonName = "system:apichain:gateway"

// Outgoing returns ctx with c attached to outgoing gRPC metadata.
func Outgoing(ctx context.Context, c *resourcev1.Caller) context.Context {
	data, err := proto.Marshal(c)
	if err != nil {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, MetadataKey, string(data))
}

// ErrUntrustedPeer is returned when identity metadata comes from anyone but the gateway.
var ErrUntrustedPeer = errors.New("identity metadata accepted only from the gateway")

// FromIncoming returns the Caller sent by the gateway, or nil if none was sent. It fails if
// identity metadata was sent by a peer without the gateway's client certificate.
func FromIncoming(ctx context.Context) (*resourcev1.Caller, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get(MetadataKey)
	if len(vals) == 0 {
		return nil, nil
	}
	if !IsGateway(ctx) {
		return nil, ErrUntrustedPeer
	}
	c := &resourcev1.Caller{}
	if err := proto.Unmarshal([]byte(vals[0]), c); err != nil {
		return nil, err
	}
	return c, nil
}

// IsGateway reports whether the gRPC peer presented the gateway's verified client certificate.
func IsGateway(ctx context.Context) bool {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return false
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(info.State.VerifiedChains) == 0 {
		return false
	}
	return leafCN(info.State.VerifiedChains[0]) == GatewayCommonName
}

func leafCN(chain []*x509.Certificate) string {
	if len(chain) == 0 {
		return ""
	}
	return chain[0].Subject.CommonName
}

type ctxKey struct{}

// WithCaller stores c in ctx for handlers.
func WithCaller(ctx context.Context, c *resourcev1.Caller) context.Context {
	return context.WithValue(ctx, ctxKey{}, c)
}

// From returns the Caller stored by WithCaller.
func From(ctx context.Context) (*resourcev1.Caller, bool) {
	c, ok := ctx.Value(ctxKey{}).(*resourcev1.Caller)
	return c, ok && c != nil
}
