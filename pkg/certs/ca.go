package certs

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"strings"
	"time"
)

// clockSkew backdates NotBefore so peers whose clocks run slightly behind
// still accept a freshly issued certificate.
const clockSkew = 5 * time.Minute

// CA is a certificate authority that can sign serving and client certs.
type CA struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte
}

// NewCA creates a self-signed CA with a fresh P-256 key.
func NewCA(commonName string, validity time.Duration) (*CA, error) {
	if validity <= 0 {
		return nil, errors.New("certs: CA validity must be positive")
	}
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		// Only leaves are issued, never intermediates.
		MaxPathLen:     0,
		MaxPathLenZero: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("certs: create CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key, CertPEM: encodeCert(der)}, nil
}

// LoadCA reads a CA certificate and its key from PEM files.
func LoadCA(certFile, keyFile string) (*CA, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("certs: read CA cert: %w", err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("certs: read CA key: %w", err)
	}
	cert, err := parseCertPEM(certPEM)
	if err != nil {
		return nil, fmt.Errorf("certs: %s: %w", certFile, err)
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("certs: %s is not a CA certificate", certFile)
	}
	key, err := parseKeyPEM(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("certs: %s: %w", keyFile, err)
	}
	if !keyMatchesCert(key, cert) {
		return nil, fmt.Errorf("certs: %s does not match %s", keyFile, certFile)
	}
	return &CA{Cert: cert, Key: key, CertPEM: encodeCert(cert.Raw)}, nil
}

// IssueServing signs a TLS server certificate. Each host is put in the SAN
// as an IP address if it parses as one, otherwise as a DNS name.
func (ca *CA) IssueServing(commonName string, hosts []string, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: commonName},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	tmpl.DNSNames, tmpl.IPAddresses = splitHosts(hosts)
	return ca.issue(tmpl, validity)
}

// IssueClient signs a TLS client certificate. Kubernetes authenticates the
// user as the CN and the groups as the O values.
func (ca *CA) IssueClient(commonName string, organizations []string, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: commonName, Organization: organizations},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	return ca.issue(tmpl, validity)
}

// issue fills in the fields shared by all leaf certs and signs tmpl.
func (ca *CA) issue(tmpl *x509.Certificate, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	if validity <= 0 {
		return nil, nil, errors.New("certs: validity must be positive")
	}
	key, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	if tmpl.SerialNumber, err = newSerial(); err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl.NotBefore = now.Add(-clockSkew)
	tmpl.NotAfter = now.Add(validity)
	// A leaf outliving its CA would fail verification anyway; clamp it so
	// the expiry reported by the leaf is the real one.
	if tmpl.NotAfter.After(ca.Cert.NotAfter) {
		tmpl.NotAfter = ca.Cert.NotAfter
	}
	// ECDSA keys sign; they never encipher keys, so DigitalSignature only.
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.BasicConstraintsValid = true
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return nil, nil, fmt.Errorf("certs: sign %q: %w", tmpl.Subject.CommonName, err)
	}
	keyPEM, err = encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return encodeCert(der), keyPEM, nil
}

// newSerial returns a random 128-bit serial, as RFC 5280 recommends
// unpredictable serials of at most 20 octets.
func newSerial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
}

// splitHosts sorts hosts into DNS names and IPs, dropping blanks and
// duplicates so callers can pass overlapping lists.
func splitHosts(hosts []string) (dns []string, ips []net.IP) {
	seen := map[string]bool{}
	for _, h := range hosts {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		if ip := net.ParseIP(h); ip != nil {
			if key := ip.String(); !seen[key] {
				seen[key] = true
				ips = append(ips, ip)
			}
			continue
		}
		if key := strings.ToLower(h); !seen[key] {
			seen[key] = true
			dns = append(dns, h)
		}
	}
	return dns, ips
}
