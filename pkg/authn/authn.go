// Package authn is how the gateway finds out who sent a request: client certificates,
// static bearer tokens, and the rule for requests without credentials. The authentication
// filter runs it for every request; the TokenReview API runs it for a token.
package authn

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/apichain/apichain/pkg/user"
)

// CredentialIDKey is the user extra that names the credential a request authenticated with.
const CredentialIDKey = "authentication.kubernetes.io/credential-id"

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
	// Anonymous makes a request without credentials system:anonymous in
	// system:unauthenticated, for the authorizer to decide on (kube's --anonymous-auth);
	// without it such a request is 401.
	Anonymous bool
}

// Authenticate finds the request's user as kube's union authenticator does: the first
// authenticator that accepts the request decides, with system:authenticated added; an
// authenticator's error does not end the search (a bad token, then a good client certificate),
// but a request that presented bad credentials and nothing good is not anonymous. ok=false
// means 401; errs are the authenticators' errors, for the log.
func (a Authentication) Authenticate(r *http.Request) (u *user.User, ok bool, errs []error) {
	for _, authenticator := range a.Authenticators {
		u, ok, err := authenticator.AuthenticateRequest(r)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			return WithAuthenticatedGroup(u), true, errs
		}
	}
	if len(errs) == 0 && a.Anonymous {
		return &user.User{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}, true, nil
	}
	return nil, false, errs
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

// X509Authenticator reads the user from a client certificate that verifies against
// clientCAs for client authentication: CN is the user name, O the groups. As in kube, the TLS
// handshake accepts any certificate and this check decides, so a certificate from another CA
// is a 401, not a failed handshake. A certificate sent alone that verified is remembered by its
// SHA-256 until its chain's first expiry, so a client's every request does not verify its
// signature again (kube verifies each time; it was a tenth of the gateway's CPU under load).
func X509Authenticator(clientCAs *x509.CertPool) Authenticator {
	a := &x509Authenticator{roots: clientCAs, now: time.Now, verified: map[[sha256.Size]byte]time.Time{}}
	return AuthenticatorFunc(a.authenticate)
}

// maxVerified bounds the remembered verifications; past it they are forgotten at once.
const maxVerified = 4096

type x509Authenticator struct {
	roots    *x509.CertPool
	now      func() time.Time
	mu       sync.Mutex
	verified map[[sha256.Size]byte]time.Time // a leaf's SHA-256: until when it verifies
}

func (a *x509Authenticator) authenticate(r *http.Request) (*user.User, bool, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	leaf, alone := r.TLS.PeerCertificates[0], len(r.TLS.PeerCertificates) == 1
	sum := sha256.Sum256(leaf.Raw)
	if !alone || !a.remembered(sum) {
		chains, err := verifiedClientCert(r.TLS, a.roots)
		if err != nil {
			return nil, false, fmt.Errorf("verifying certificate SN=%d, SKID=%x, AKID=%x failed: %w",
				leaf.SerialNumber, leaf.SubjectKeyId, leaf.AuthorityKeyId, err)
		}
		if alone {
			a.remember(sum, chains[0])
		}
	}
	if leaf.Subject.CommonName == "" {
		return nil, false, nil
	}
	// kube names the credential by the certificate's SHA-256 (audit, SelfSubjectReview).
	return &user.User{Name: leaf.Subject.CommonName, Groups: append([]string(nil), leaf.Subject.Organization...),
		Extra: map[string][]string{CredentialIDKey: {"X509SHA256=" + hex.EncodeToString(sum[:])}}}, true, nil
}

func (a *x509Authenticator) remembered(sum [sha256.Size]byte) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	until, ok := a.verified[sum]
	if ok && !a.now().Before(until) {
		delete(a.verified, sum)
		return false
	}
	return ok
}

// remember keeps a verification until the first expiry in its chain.
func (a *x509Authenticator) remember(sum [sha256.Size]byte, chain []*x509.Certificate) {
	until := chain[0].NotAfter
	for _, c := range chain[1:] {
		if c.NotAfter.Before(until) {
			until = c.NotAfter
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.verified) >= maxVerified {
		clear(a.verified)
	}
	a.verified[sum] = until
}

// verifiedClientCert verifies the client's certificate against roots for client
// authentication (with the intermediates the client sent), and returns its chains.
func verifiedClientCert(state *tls.ConnectionState, roots *x509.CertPool) ([][]*x509.Certificate, error) {
	intermediates := x509.NewCertPool()
	for _, c := range state.PeerCertificates[1:] {
		intermediates.AddCert(c)
	}
	return state.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: intermediates,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
}
