package authn

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/apichain/apichain/pkg/certs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func issue(t testing.TB, ca *certs.CA, cn string, orgs ...string) *x509.Certificate {
	t.Helper()
	certPEM, _, err := ca.IssueClient(cn, orgs, time.Hour)
	require.NoError(t, err)
	block, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	return cert
}

// A certificate that verified is remembered until its chain's first expiry; one that did not
// verify, or came with intermediates, is verified every time.
func TestX509AuthenticatorRemembersVerifications(t *testing.T) {
	ca, err := certs.NewCA("ca", 2*time.Hour)
	require.NoError(t, err)
	other, err := certs.NewCA("other", 2*time.Hour)
	require.NoError(t, err)
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	now := time.Now()
	a := &x509Authenticator{roots: roots, now: func() time.Time { return now }, verified: map[[sha256.Size]byte]time.Time{}}
	request := func(chain ...*x509.Certificate) (string, error) {
		r := httptest.NewRequest("GET", "/", nil)
		r.TLS = &tls.ConnectionState{PeerCertificates: chain}
		u, ok, err := a.authenticate(r)
		if err != nil || !ok {
			return "", err
		}
		return u.Name + " " + u.Groups[0], nil
	}

	alice := issue(t, ca, "alice", "devs")
	sum := sha256.Sum256(alice.Raw)
	for range 2 {
		got, err := request(alice)
		require.NoError(t, err)
		assert.Equal(t, "alice devs", got)
		assert.True(t, a.remembered(sum))
	}
	assert.Equal(t, alice.NotAfter, a.verified[sum], "until the leaf's expiry, before the CA's")

	mallory := issue(t, other, "alice", "devs")
	for range 2 {
		_, err := request(mallory)
		require.ErrorContains(t, err, "verifying certificate")
		assert.False(t, a.remembered(sha256.Sum256(mallory.Raw)), "a failure is not remembered")
	}

	bob := issue(t, ca, "bob", "devs")
	_, err = request(bob, ca.Cert)
	require.NoError(t, err)
	assert.False(t, a.remembered(sha256.Sum256(bob.Raw)), "a certificate sent with intermediates is verified each time")

	now = alice.NotAfter
	assert.False(t, a.remembered(sum), "forgotten once expired")
	assert.NotContains(t, a.verified, sum)

	now = time.Now()
	for i := range maxVerified {
		var s [sha256.Size]byte
		s[0], s[1] = byte(i), byte(i>>8)
		a.remember(s, []*x509.Certificate{alice})
	}
	assert.LessOrEqual(t, len(a.verified), maxVerified, "bounded")
}

// BenchmarkX509Authenticate is one request's client-certificate check: verified every time
// (as kube does, and the gateway did), against remembered.
func BenchmarkX509Authenticate(b *testing.B) {
	ca, err := certs.NewCA("ca", time.Hour)
	require.NoError(b, err)
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	r := httptest.NewRequest("GET", "/", nil)
	r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{issue(b, ca, "alice", "devs")}}
	b.Run("verify", func(b *testing.B) {
		for b.Loop() {
			_, err := verifiedClientCert(r.TLS, roots)
			require.NoError(b, err)
		}
	})
	b.Run("remembered", func(b *testing.B) {
		auth := X509Authenticator(roots)
		for b.Loop() {
			_, ok, err := auth.AuthenticateRequest(r)
			require.True(b, ok)
			require.NoError(b, err)
		}
	})
}
