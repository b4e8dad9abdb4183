// Package authn is how the gateway finds out who sent a request: client certificates,
// static bearer tokens, and the rule for requests without credentials. The authentication
// filter runs it for every request; the TokenReview API runs it for a token.
package authn

import (
	"net/http"
	"slices"

	"github.com/apichain/apichain/pkg/user"
)

// Authenticator finds the user of a request. ok=false means "no credentials of my kind";
// an error means the credentials were present but bad.
type Authenticator interface {
	AuthenticateRequest(r *http.Request) (u *user.User, ok bool, err error)
}

// AuthenticatorFunc adapts a function.
type AuthenticatorFunc func(r *http.Request) (*user.User, bool, error)

// AuthenticateRequest calls f.
func (f AuthenticatorFunc) AuthenticateRequest(r *http.Request) (*user.User, bool, error) {
	return f(r)
}

// Authentication is the ordered list of authenticators and the anonymous rule.
type Authentication struct {
	Authenticators []Authenticator
	// AnonymousPaths are the non-resource paths anonymous requests may reach (health and
	// version); anywhere else a request without credentials is 401. Empty disables anonymous.
	AnonymousPaths []string
}

// WithAuthenticatedGroup adds system:authenticated as kube's AuthenticatedGroupAdder does:
// not to system:anonymous, nor to a user already in system:authenticated or
// system:unauthenticated. It returns a copy; the authenticator's user is not modified.
func WithAuthenticatedGroup(u *user.User) *user.User {
	if u.Name == user.Anonymous || slices.Contains(u.Groups, user.AllAuthenticated) || slices.Contains(u.Groups, user.AllUnauthenticated) {
		return u
	}
	cp := *u
	cp.Groups = append(slices.Clip(u.Groups), user.AllAuthenticated)
	return &cp
}

// X509Authenticator reads the user from a verified client certificate: CN is the user name,
// O the groups, as kube does.
func X509Authenticator() Authenticator {
	return AuthenticatorFunc(func(r *http.Request) (*user.User, bool, error) {
		if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
			return nil, false, nil
		}
		leaf := r.TLS.VerifiedChains[0][0]
		if leaf.Subject.CommonName == "" {
			return nil, false, nil
		}
		return &user.User{Name: leaf.Subject.CommonName, Groups: append([]string(nil), leaf.Subject.Organization...)}, true, nil
	})
}
