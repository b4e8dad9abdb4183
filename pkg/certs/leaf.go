package certs

import (
	"crypto/x509"
	"slices"
	"strings"
	"time"
)

// leafSpec describes one certificate EnsurePKI maintains.
type leafSpec struct {
	certFile, keyFile string
	commonName        string
	server            bool     // serving cert; otherwise a client cert
	peer              bool     // with server: a client cert as well (an etcd member's, a backend's)
	hosts             []string // SANs a serving cert must cover
	orgs              []string // groups of a client cert
}

// usable reports whether the files on disk already satisfy l. Unparseable
// files count as unusable (they get replaced); only I/O errors other than
// "not found" are returned, so a permission problem is not papered over.
func (l leafSpec) usable(ca *CA) (bool, error) {
	certPEM, keyPEM, err := readLeaf(l)
	if err != nil || certPEM == nil {
		return false, err
	}
	cert, err := parseCertPEM(certPEM)
	if err != nil {
		return false, nil
	}
	key, err := parseKeyPEM(keyPEM)
	if err != nil || !keyMatchesCert(key, cert) {
		return false, nil
	}
	if cert.CheckSignatureFrom(ca.Cert) != nil {
		return false, nil // signed by a previous CA
	}
	// Renew near expiry, but not when the CA's own expiry is what caps the
	// leaf: reissuing could not extend it and would churn on every start.
	renewAt := time.Now().Add(RenewBefore)
	if ca.Cert.NotAfter.Before(renewAt) {
		renewAt = ca.Cert.NotAfter
	}
	if cert.NotAfter.Before(renewAt) {
		return false, nil
	}
	if cert.Subject.CommonName != l.commonName {
		return false, nil
	}
	if l.server {
		return hasUsage(cert, x509.ExtKeyUsageServerAuth) && coversHosts(cert, l.hosts) &&
			(!l.peer || hasUsage(cert, x509.ExtKeyUsageClientAuth)), nil
	}
	return hasUsage(cert, x509.ExtKeyUsageClientAuth) && sameSet(cert.Subject.Organization, l.orgs), nil
}

func hasUsage(cert *x509.Certificate, u x509.ExtKeyUsage) bool {
	return slices.Contains(cert.ExtKeyUsage, u)
}

// coversHosts compares SANs literally (not via VerifyHostname) so a
// requested wildcard name is recognised as already present.
func coversHosts(cert *x509.Certificate, hosts []string) bool {
	dns, ips := splitHosts(hosts)
	for _, want := range ips {
		if !slices.ContainsFunc(cert.IPAddresses, want.Equal) {
			return false
		}
	}
	for _, want := range dns {
		if !slices.ContainsFunc(cert.DNSNames, func(have string) bool { return strings.EqualFold(have, want) }) {
			return false
		}
	}
	return true
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}
