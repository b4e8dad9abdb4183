// Package user is an authenticated identity, as kube's user.Info, and how it travels in a
// request's context: the gateway's authentication puts it there, and a backend finds there
// the identity the gateway sent with the request.
package user

import (
	"context"

	authenticationv1 "k8s.io/api/authentication/v1"
)

// User is an authenticated identity.
type User struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

// Well-known users and groups.
const (
	Anonymous             = "system:anonymous"
	AllUnauthenticated    = "system:unauthenticated"
	AllAuthenticated      = "system:authenticated"
	SystemPrivilegedGroup = "system:masters"
	MonitoringGroup       = "system:monitoring"
	// BackendsGroup is apichain's backends' identity towards the gateways, for the reviews
	// their metrics endpoints ask for (and nothing else).
	BackendsGroup = "system:apichain:backends"
)

type key struct{}

// WithUser stores u in ctx.
func WithUser(ctx context.Context, u *User) context.Context {
	return context.WithValue(ctx, key{}, u)
}

// From returns the request's user.
func From(ctx context.Context) (*User, bool) {
	u, ok := ctx.Value(key{}).(*User)
	return u, ok && u != nil
}

// Info is u as kube's API objects carry a user (reviews, audit events); nil is the empty user.
func (u *User) Info() authenticationv1.UserInfo {
	if u == nil {
		return authenticationv1.UserInfo{}
	}
	out := authenticationv1.UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups}
	for k, v := range u.Extra {
		if out.Extra == nil {
			out.Extra = map[string]authenticationv1.ExtraValue{}
		}
		out.Extra[k] = v
	}
	return out
}
