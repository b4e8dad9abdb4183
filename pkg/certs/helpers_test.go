package certs

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"testing"
)

func mustParseCert(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	c, err := parseCertPEM(certPEM)
	if err != nil {
		t.Fatalf("parse cert: %v", err)
	}
	return c
}

func mustReadCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	return mustParseCert(t, mustRead(t, path))
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// verify checks cert chains to ca for the given usage.
func verify(t *testing.T, ca *x509.Certificate, cert *x509.Certificate, dnsName string, usage x509.ExtKeyUsage) {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: dnsName, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
		t.Fatalf("verify %q (name %q): %v", cert.Subject.CommonName, dnsName, err)
	}
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
