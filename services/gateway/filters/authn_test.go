package filters

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/apichain/apichain/pkg/authn"
	"github.com/apichain/apichain/pkg/certs"
	"github.com/apichain/apichain/pkg/user"
)

var unauthorizedStatus = wantStatus{http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "Unauthorized"}

const authnTokens = `# static tokens
tok-alice,alice,uid-alice,"dev,ops"
tok-bob,bob,uid-bob
`

// Client certificates: from the client CA, and from a CA the gateway does not trust.
var clientCA, strangerCA = newTestCA("client-ca"), newTestCA("stranger-ca")

func newTestCA(name string) *certs.CA {
	ca, err := certs.NewCA(name, time.Hour)
	if err != nil {
		panic(err)
	}
	return ca
}

func clientCAs() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(clientCA.Cert)
	return pool
}

// peerTLS is what crypto/tls leaves on a request whose client sent a certificate from ca.
func peerTLS(ca *certs.CA, cn string, orgs ...string) *tls.ConnectionState {
	certPEM, _, err := ca.IssueClient(cn, orgs, time.Hour)
	if err != nil {
		panic(err)
	}
	block, _ := pem.Decode(certPEM)
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		panic(err)
	}
	return &tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf}}
}

func verifiedTLS(cn string, orgs ...string) *tls.ConnectionState {
	return peerTLS(clientCA, cn, orgs...)
}

func TestWithAuthentication(t *testing.T) {
	tokenFile, err := authn.ParseTokenFile(strings.NewReader(authnTokens))
	require.NoError(t, err)

	tf := authn.NewBearer(nil, tokenFile)
	cases := []struct {
		name     string
		authns   []authn.Authenticator // default: token file, then x509
		noAnon   bool
		path     string
		authz    string
		tls      *tls.ConnectionState
		wantUser string // "" wants 401
		wantGrps []string
	}{
		// no credentials
		{name: "api without credentials is anonymous, for the authorizer", path: "/api/v1/namespaces/ns/pods",
			wantUser: user.Anonymous, wantGrps: []string{user.AllUnauthenticated}},
		{name: "api without credentials and anonymous disabled", path: "/api/v1/namespaces/ns/pods", noAnon: true},
		{name: "readyz anonymous", path: "/readyz", wantUser: user.Anonymous, wantGrps: []string{user.AllUnauthenticated}},
		{name: "readyz subpath anonymous", path: "/readyz/ping", wantUser: user.Anonymous, wantGrps: []string{user.AllUnauthenticated}},
		{name: "version anonymous", path: "/version", wantUser: user.Anonymous, wantGrps: []string{user.AllUnauthenticated}},
		{name: "any path", path: "/", wantUser: user.Anonymous, wantGrps: []string{user.AllUnauthenticated}},
		{name: "anonymous disabled", path: "/readyz", noAnon: true},

		// bearer tokens
		{name: "valid token", path: "/api/v1/namespaces/ns/pods", authz: "Bearer tok-alice",
			wantUser: "alice", wantGrps: []string{"dev", "ops", user.AllAuthenticated}},
		{name: "valid token, no groups", path: "/apis/apps/v1/deployments", authz: "bearer tok-bob",
			wantUser: "bob", wantGrps: []string{user.AllAuthenticated}},
		{name: "valid token on an anonymous path", path: "/readyz", authz: "Bearer tok-bob",
			wantUser: "bob", wantGrps: []string{user.AllAuthenticated}},
		{name: "invalid token", path: "/api/v1/namespaces/ns/pods", authz: "Bearer nope"},
		{name: "invalid token is never anonymous", path: "/readyz", authz: "Bearer nope"},
		{name: "empty token is no credential", path: "/readyz", authz: "Bearer  tok-alice",
			wantUser: user.Anonymous, wantGrps: []string{user.AllUnauthenticated}},
		{name: "basic auth is not ours", path: "/api/v1/pods", authz: "Basic YWxpY2U6cHc=", wantUser: user.Anonymous, wantGrps: []string{user.AllUnauthenticated}},

		// client certificates
		{name: "x509 user and groups", path: "/api/v1/pods", tls: verifiedTLS("carol", "team-a", "team-b"),
			wantUser: "carol", wantGrps: []string{"team-a", "team-b", user.AllAuthenticated}},
		{name: "x509 without O", path: "/api/v1/pods", tls: verifiedTLS("dave"),
			wantUser: "dave", wantGrps: []string{user.AllAuthenticated}},
		{name: "x509 without CN is no credential", path: "/api/v1/pods", tls: verifiedTLS("", "team-a"), wantUser: user.Anonymous, wantGrps: []string{user.AllUnauthenticated}},
		{name: "certificate from another CA is 401, not anonymous", path: "/readyz", tls: peerTLS(strangerCA, "eve")},
		{name: "x509 already in system:authenticated", path: "/api/v1/pods", tls: verifiedTLS("frank", user.AllAuthenticated),
			wantUser: "frank", wantGrps: []string{user.AllAuthenticated}},
		{name: "x509 in system:masters", path: "/api/v1/pods", tls: verifiedTLS("root", user.SystemPrivilegedGroup),
			wantUser: "root", wantGrps: []string{user.SystemPrivilegedGroup, user.AllAuthenticated}},

		// several authenticators, as kube's union
		{name: "token wins when first", path: "/api/v1/pods", authz: "Bearer tok-alice", tls: verifiedTLS("carol"),
			wantUser: "alice", wantGrps: []string{"dev", "ops", user.AllAuthenticated}},
		{name: "bad token, then a good certificate", path: "/api/v1/pods", authz: "Bearer nope", tls: verifiedTLS("carol"),
			wantUser: "carol", wantGrps: []string{user.AllAuthenticated}},
		{name: "certificate first", path: "/api/v1/pods", authz: "Bearer tok-alice", tls: verifiedTLS("carol"),
			authns:   []authn.Authenticator{authn.X509Authenticator(clientCAs()), tf},
			wantUser: "carol", wantGrps: []string{user.AllAuthenticated}},
		{name: "an erroring authenticator does not stop the chain", path: "/api/v1/pods", authz: "Bearer tok-bob",
			authns: []authn.Authenticator{authn.AuthenticatorFunc(func(*http.Request) (*user.User, bool, error) {
				return nil, false, errors.New("backend down")
			}), tf},
			wantUser: "bob", wantGrps: []string{user.AllAuthenticated}},
		{name: "a token nobody reads", path: "/api/v1/pods", authz: "Bearer tok-bob", authns: []authn.Authenticator{}, wantUser: user.Anonymous, wantGrps: []string{user.AllUnauthenticated}},
		{name: "a token nobody reads, no anonymous", path: "/api/v1/pods", authz: "Bearer tok-bob", authns: []authn.Authenticator{}, noAnon: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			authns := tc.authns
			if authns == nil {
				authns = []authn.Authenticator{tf, authn.X509Authenticator(clientCAs())}
			}
			var gotUser *user.User
			var gotAuthz []string
			called := false
			h := WithAuthentication(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				called = true
				gotUser, _ = user.From(r.Context())
				gotAuthz = r.Header.Values("Authorization")
			}), authn.Authentication{Authenticators: authns, Anonymous: !tc.noAnon}, discardLog, nil)

			req := httptest.NewRequest("GET", tc.path, nil)
			if tc.authz != "" {
				req.Header.Set("Authorization", tc.authz)
			}
			req.TLS = tc.tls
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)

			if tc.wantUser == "" {
				requireRecStatus(t, rec, unauthorizedStatus)
				assert.False(t, called)
				return
			}
			require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
			require.NotNil(t, gotUser)
			assert.Equal(t, tc.wantUser, gotUser.Name)
			assert.Equal(t, tc.wantGrps, gotUser.Groups)
			if tc.wantUser != user.Anonymous {
				assert.Empty(t, gotAuthz, "credentials are stripped once authenticated")
			}
		})
	}
}

func TestWithAuthenticationTokenUserDetails(t *testing.T) {
	tf, err := authn.ParseTokenFile(strings.NewReader(authnTokens))
	require.NoError(t, err)
	var got []*user.User
	h := WithAuthentication(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, _ := user.From(r.Context())
		got = append(got, u)
	}), authn.Authentication{Authenticators: []authn.Authenticator{authn.NewBearer(nil, tf)}}, discardLog, nil)

	for range 2 {
		req := httptest.NewRequest("GET", "/api/v1/pods", nil)
		req.Header.Set("Authorization", "Bearer tok-alice")
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	require.Len(t, got, 2)
	for _, u := range got {
		assert.Equal(t, &user.User{Name: "alice", UID: "uid-alice", Groups: []string{"dev", "ops", user.AllAuthenticated}}, u)
	}
	// The token file's own record is not modified by the group added per request.
	req := httptest.NewRequest("GET", "/", nil)
	req.Header.Set("Authorization", "Bearer tok-alice")
	u, ok, err := authn.NewBearer(nil, tf).AuthenticateRequest(req)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, []string{"dev", "ops"}, u.Groups)
}
