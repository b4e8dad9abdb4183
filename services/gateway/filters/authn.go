package filters

import (
	"log/slog"
	"net/http"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Authenticator finds the user of a request. ok=false means "no credentials of my kind";
// an error means the credentials were present but bad.
type Authenticator interface {
	AuthenticateRequest(r *http.Request) (u *User, ok bool, err error)
}

// AuthenticatorFunc adapts a function.
type AuthenticatorFunc func(r *http.Request) (*User, bool, error)

// AuthenticateRequest calls f.
func (f AuthenticatorFunc) AuthenticateRequest(r *http.Request) (*User, bool, error) { return f(r) }

// Authentication is the ordered list of authenticators and the anonymous rule.
type Authentication struct {
	Authenticators []Authenticator
	// AnonymousPaths are the non-resource paths anonymous requests may reach (health and
	// version); anywhere else a request without credentials is 401. Empty disables anonymous.
	AnonymousPaths []string
}

// WithAuthentication identifies the user; credentials are stripped before delegation so
// backends only ever see the identity the gateway established.
//
// As kube's union authenticator, an authenticator's error does not end the search: a later
// one may still succeed (a bad token, then a good client certificate). But a request that
// presented bad credentials and nothing good is 401, never anonymous.
func WithAuthentication(next http.Handler, a Authentication, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		failed := false
		for _, authn := range a.Authenticators {
			u, ok, err := authn.AuthenticateRequest(r)
			if err != nil {
				log.Debug("authentication failed", "path", r.URL.Path, "err", err)
				failed = true
				continue
			}
			if ok {
				r.Header.Del("Authorization")
				next.ServeHTTP(w, r.WithContext(WithUser(r.Context(), WithAuthenticatedGroup(u))))
				return
			}
		}
		if failed {
			unauthorized(w)
			return
		}
		if anonymousAllowed(r.URL.Path, a.AnonymousPaths) {
			u := &User{Name: Anonymous, Groups: []string{AllUnauthenticated}}
			next.ServeHTTP(w, r.WithContext(WithUser(r.Context(), u)))
			return
		}
		unauthorized(w)
	})
}

func unauthorized(w http.ResponseWriter) {
	WriteError(w, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "Unauthorized")
}

func anonymousAllowed(path string, allowed []string) bool {
	for _, p := range allowed {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// WithAuthenticatedGroup adds system:authenticated as kube's AuthenticatedGroupAdder does:
// not to system:anonymous, nor to a user already in system:authenticated or
// system:unauthenticated. It returns a copy; the authenticator's user is not modified.
func WithAuthenticatedGroup(u *User) *User {
	if u.Name == Anonymous || slices.Contains(u.Groups, AllAuthenticated) || slices.Contains(u.Groups, AllUnauthenticated) {
		return u
	}
	cp := *u
	cp.Groups = append(slices.Clip(u.Groups), AllAuthenticated)
	return &cp
}

// X509Authenticator reads the user from a verified client certificate: CN is the user name,
// O the groups, as kube does.
func X509Authenticator() Authenticator {
	return AuthenticatorFunc(func(r *http.Request) (*User, bool, error) {
		if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
			return nil, false, nil
		}
		leaf := r.TLS.VerifiedChains[0][0]
		if leaf.Subject.CommonName == "" {
			return nil, false, nil
		}
		return &User{Name: leaf.Subject.CommonName, Groups: append([]string(nil), leaf.Subject.Organization...)}, true, nil
	})
}
