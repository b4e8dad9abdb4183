package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewCA(t *testing.T) {
	ca, err := NewCA("test-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !ca.Cert.IsCA || ca.Cert.Subject.CommonName != "test-ca" {
		t.Fatalf("bad CA cert: IsCA=%v CN=%q", ca.Cert.IsCA, ca.Cert.Subject.CommonName)
	}
	if pub, ok := ca.Cert.PublicKey.(*ecdsa.PublicKey); !ok || pub.Curve != elliptic.P256() {
		t.Fatalf("CA key is %T, want P-256", ca.Cert.PublicKey)
	}
	if err := ca.Cert.CheckSignatureFrom(ca.Cert); err != nil {
		t.Fatalf("not self-signed: %v", err)
	}
	if !mustParseCert(t, ca.CertPEM).Equal(ca.Cert) {
		t.Fatal("CertPEM does not match Cert")
	}
}

func TestIssueServing(t *testing.T) {
	ca, err := NewCA("test-ca", 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	hosts := []string{"api.example.com", "10.0.0.1", "::1", "api.example.com", " ", "localhost"}
	certPEM, keyPEM, err := ca.IssueServing("srv", hosts, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert := mustParseCert(t, certPEM)
	if want := []string{"api.example.com", "localhost"}; !slices.Equal(cert.DNSNames, want) {
		t.Errorf("DNSNames = %v, want %v", cert.DNSNames, want)
	}
	if len(cert.IPAddresses) != 2 || !cert.IPAddresses[0].Equal(net.ParseIP("10.0.0.1")) ||
		!cert.IPAddresses[1].Equal(net.IPv6loopback) {
		t.Errorf("IPAddresses = %v", cert.IPAddresses)
	}
	for _, h := range []string{"api.example.com", "localhost", "10.0.0.1", "::1"} {
		verify(t, ca.Cert, cert, h, x509.ExtKeyUsageServerAuth)
	}
	if err := cert.VerifyHostname("other.example.com"); err == nil {
		t.Error("cert unexpectedly valid for other.example.com")
	}
	if !slices.Equal(cert.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}) || cert.IsCA {
		t.Errorf("ExtKeyUsage = %v IsCA=%v", cert.ExtKeyUsage, cert.IsCA)
	}
	key, err := parseKeyPEM(keyPEM)
	if err != nil || !keyMatchesCert(key, cert) {
		t.Fatalf("key does not match cert: %v", err)
	}
}

func TestIssueClient(t *testing.T) {
	ca, err := NewCA("test-ca", 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, _, err := ca.IssueClient("alice", []string{"dev", "ops"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert := mustParseCert(t, certPEM)
	if cert.Subject.CommonName != "alice" || !slices.Equal(cert.Subject.Organization, []string{"dev", "ops"}) {
		t.Errorf("subject = %v", cert.Subject)
	}
	verify(t, ca.Cert, cert, "", x509.ExtKeyUsageClientAuth)
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots}); err == nil {
		t.Error("client cert must not verify for server auth")
	}
}

func TestLeafClampedToCA(t *testing.T) {
	ca, err := NewCA("short-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, _, err := ca.IssueClient("bob", nil, 48*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if got := mustParseCert(t, certPEM).NotAfter; got.After(ca.Cert.NotAfter) {
		t.Errorf("leaf NotAfter %v after CA NotAfter %v", got, ca.Cert.NotAfter)
	}
}

func TestLoadCA(t *testing.T) {
	dir := t.TempDir()
	ca, err := NewCA("test-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err := encodeKey(ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")
	if err := os.WriteFile(certFile, ca.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	loaded, err := LoadCA(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if !loaded.Cert.Equal(ca.Cert) || string(loaded.CertPEM) != string(ca.CertPEM) {
		t.Fatal("loaded CA differs")
	}
	// A loaded CA must be able to sign.
	leafPEM, _, err := loaded.IssueClient("x", nil, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	verify(t, ca.Cert, mustParseCert(t, leafPEM), "", x509.ExtKeyUsageClientAuth)

	other, _ := NewCA("other", time.Hour)
	otherKey, _ := encodeKey(other.Key)
	if err := os.WriteFile(keyFile, otherKey, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadCA(certFile, keyFile); err == nil {
		t.Fatal("LoadCA accepted a key that does not match the cert")
	}
}

func TestParseKeyPEMFormats(t *testing.T) {
	key, err := newKey()
	if err != nil {
		t.Fatal(err)
	}
	sec1, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	// openssl ecparam -genkey emits an EC PARAMETERS block first.
	data := []byte("-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----\n")
	data = append(data, pemBlock(pemTypeEC, sec1)...)
	got, err := parseKeyPEM(data)
	if err != nil {
		t.Fatal(err)
	}
	if !key.Equal(got) {
		t.Fatal("parsed SEC1 key differs")
	}
}

func TestServiceAccountKeyKeptAcrossRuns(t *testing.T) {
	dir := t.TempDir()
	p, err := EnsurePKI(dir, nil, nil)
	require.NoError(t, err)
	key1, err := os.ReadFile(p.ServiceAccountKeyFile)
	require.NoError(t, err)
	signer, err := ParsePrivateKeyPEM(key1)
	require.NoError(t, err)
	pubPEM, err := os.ReadFile(p.ServiceAccountPublicKeyFile)
	require.NoError(t, err)
	pubs, err := ParsePublicKeysPEM(pubPEM)
	require.NoError(t, err)
	require.Len(t, pubs, 1)
	assert.True(t, signer.Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(pubs[0]), "sa.pub is sa.key's public half")

	// A second run keeps the key (tokens already issued stay valid) and restores a lost sa.pub.
	require.NoError(t, os.Remove(p.ServiceAccountPublicKeyFile))
	p, err = EnsurePKI(dir, nil, nil)
	require.NoError(t, err)
	key2, err := os.ReadFile(p.ServiceAccountKeyFile)
	require.NoError(t, err)
	assert.Equal(t, key1, key2)
	pubPEM2, err := os.ReadFile(p.ServiceAccountPublicKeyFile)
	require.NoError(t, err)
	assert.Equal(t, pubPEM, pubPEM2)

	// Private keys in a key file count with their public halves; other blocks do not.
	pubs, err = ParsePublicKeysPEM(append(append([]byte{}, key1...), pubPEM...))
	require.NoError(t, err)
	assert.Len(t, pubs, 2)
	_, err = ParsePublicKeysPEM([]byte("-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n"))
	assert.ErrorContains(t, err, "no RSA or ECDSA key")
}
