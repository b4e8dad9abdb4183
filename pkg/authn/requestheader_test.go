package authn

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/apichain/apichain/pkg/certs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The front proxy's certificate may name the user in headers, which are then removed; another
// CA's certificate is left to the other authenticators; a name not allowed is refused.
func TestRequestHeaderAuthenticator(t *testing.T) {
	proxyCA, err := certs.NewCA("front-proxy-ca", time.Hour)
	require.NoError(t, err)
	otherCA, err := certs.NewCA("other-ca", time.Hour)
	require.NoError(t, err)
	leaf := func(ca *certs.CA, cn string) *x509.Certificate {
		certPEM, _, err := ca.IssueClient(cn, nil, time.Hour)
		require.NoError(t, err)
		block, _ := pem.Decode(certPEM)
		c, err := x509.ParseCertificate(block.Bytes)
		require.NoError(t, err)
		return c
	}
	roots := x509.NewCertPool()
	roots.AddCert(proxyCA.Cert)
	o := &RequestHeaderOptions{AllowedNames: []string{"front-proxy-client"}, UsernameHeaders: []string{"X-Remote-User"},
		GroupHeaders: []string{"X-Remote-Group"}, ExtraHeaderPrefixes: []string{"X-Remote-Extra-"}}
	a := RequestHeaderAuthenticator(o, roots)
	request := func(c *x509.Certificate) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/api", nil)
		r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{c}}
		r.Header.Set("X-Remote-User", "bob")
		r.Header.Add("X-Remote-Group", "devs")
		r.Header.Add("X-Remote-Group", "ops")
		r.Header.Add("X-Remote-Extra-Acme.com%2Fproject", "p1")
		return r
	}

	r := request(leaf(proxyCA, "front-proxy-client"))
	u, ok, err := a.AuthenticateRequest(r)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "bob", u.Name)
	assert.Equal(t, []string{"devs", "ops"}, u.Groups)
	assert.Equal(t, map[string][]string{"acme.com/project": {"p1"}}, u.Extra)
	assert.Empty(t, r.Header.Get("X-Remote-User"), "what the proxy said goes no further")
	assert.Empty(t, r.Header.Values("X-Remote-Extra-Acme.com%2Fproject"))

	_, ok, err = a.AuthenticateRequest(request(leaf(otherCA, "front-proxy-client")))
	assert.NoError(t, err)
	assert.False(t, ok, "another CA's certificate is another authenticator's business")

	_, ok, err = a.AuthenticateRequest(request(leaf(proxyCA, "someone-else")))
	assert.Error(t, err)
	assert.False(t, ok)

	noUser := request(leaf(proxyCA, "front-proxy-client"))
	noUser.Header.Del("X-Remote-User")
	_, ok, err = a.AuthenticateRequest(noUser)
	assert.NoError(t, err)
	assert.False(t, ok, "without a user header the certificate is only a certificate")
}
