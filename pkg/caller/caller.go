// Package caller carries the authenticated user from the gateway to the backends in gRPC
// metadata; backends read it only from a peer that proved to be the gateway.
package caller

import (
	"context"
	"errors"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/audit"
	"github.com/apichain/apichain/pkg/certs"
	"github.com/apichain/apichain/pkg/topology"
	"github.com/apichain/apichain/pkg/user"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/protobuf/proto"
)

// MetadataKey is the binary metadata key of the serialized Caller.
const MetadataKey = "apichain-caller-bin"

// ForRequest is the caller of a request the gateway's filters identified: its user and
// audit ID.
func ForRequest(ctx context.Context) *resourcev1.Caller {
	c := &resourcev1.Caller{AuditId: audit.IDFrom(ctx), UserAgent: UserAgent(ctx)}
	if u, ok := user.From(ctx); ok {
		c.Name, c.Uid, c.Groups = u.Name, u.UID, u.Groups
		for k, v := range u.Extra {
			if c.Extra == nil {
				c.Extra = map[string]*resourcev1.ExtraValues{}
			}
			c.Extra[k] = &resourcev1.ExtraValues{Values: v}
		}
	}
	return c
}

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
func IsGateway(ctx context.Context) bool { return peerName(ctx) == certs.GatewayUser }

// IsBackend reports whether the gRPC peer presented a backend's verified certificate: another
// service reading the kinds this one owns.
func IsBackend(ctx context.Context) bool { return peerName(ctx) == topology.BackendServerName }

// peerName is the common name of the gRPC peer's verified certificate, "" without one.
func peerName(ctx context.Context) string {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return ""
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(info.State.VerifiedChains) == 0 || len(info.State.VerifiedChains[0]) == 0 {
		return ""
	}
	return info.State.VerifiedChains[0][0].Subject.CommonName
}

// Incoming returns ctx with the user and audit ID the gateway sent (user.From, audit.IDFrom),
// for handlers, admission and logs. It fails if identity metadata comes from a peer without
// the gateway's client certificate.
func Incoming(ctx context.Context) (context.Context, error) {
	c, err := FromIncoming(ctx)
	if err != nil || c == nil {
		return ctx, err
	}
	if c.GetAuditId() != "" {
		ctx = audit.WithID(ctx, c.GetAuditId())
	}
	if modes := c.GetAuthorizationModes(); len(modes) > 0 {
		ctx = context.WithValue(ctx, modesKey{}, modes)
	}
	if ua := c.GetUserAgent(); ua != "" {
		ctx = WithUserAgent(ctx, ua)
	}
	if c.GetName() == "" {
		return ctx, nil
	}
	u := &user.User{Name: c.GetName(), UID: c.GetUid(), Groups: c.GetGroups()}
	for k, v := range c.GetExtra() {
		if u.Extra == nil {
			u.Extra = map[string][]string{}
		}
		u.Extra[k] = v.GetValues()
	}
	return user.WithUser(ctx, u), nil
}

type modesKey struct{}

// AuthorizationModes are the gateway's authorization modes the request came with.
func AuthorizationModes(ctx context.Context) []string {
	modes, _ := ctx.Value(modesKey{}).([]string)
	return modes
}

type userAgentKey struct{}

// WithUserAgent returns ctx with the client's User-Agent (the gateway's filters put it there;
// backends get it from the Caller).
func WithUserAgent(ctx context.Context, ua string) context.Context {
	return context.WithValue(ctx, userAgentKey{}, ua)
}

// UserAgent is the client's User-Agent the request came with, "" if unknown.
func UserAgent(ctx context.Context) string {
	ua, _ := ctx.Value(userAgentKey{}).(string)
	return ua
}
