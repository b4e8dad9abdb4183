// Package authz decides whether a user may do what a request asks. The authorization
// filter asks it for every request; the access review APIs ask it for a given user.
package authz

import (
	"github.com/apichain/apichain/pkg/requestinfo"
	"github.com/apichain/apichain/pkg/user"
)

// Authorizer decides whether u may do what the request info says.
type Authorizer interface {
	Authorize(u *user.User, info *requestinfo.RequestInfo) (allowed bool, reason string)
}

// AlwaysAllow allows every authenticated request, and anonymous ones only where
// authentication let them through (health and version).
type AlwaysAllow struct{}

// Authorize allows.
func (AlwaysAllow) Authorize(*user.User, *requestinfo.RequestInfo) (bool, string) { return true, "" }
