package filters

import "context"

// User is an authenticated identity, as kube's user.Info.
type User struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

// Well-known users and groups.
const (
	Anonymous           = "system:anonymous"
	AllUnauthenticated  = "system:unauthenticated"
	AllAuthenticated    = "system:authenticated"
	SystemPrivilegedGrp = "system:masters"
)

type userKey struct{}

// WithUser stores u in ctx.
func WithUser(ctx context.Context, u *User) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// UserFrom returns the authenticated user.
func UserFrom(ctx context.Context) (*User, bool) {
	u, ok := ctx.Value(userKey{}).(*User)
	return u, ok && u != nil
}
