package certs

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// ServerTLSConfig builds a server config from PEM files. With requireClientCert (backend
// mTLS) a client certificate signed by clientCAs is mandatory. Otherwise the handshake
// requests one (naming clientCAs as acceptable) and accepts whatever the client sends, as
// kube-apiserver does: authentication verifies it, so a bad certificate is a 401 rather than
// a failed handshake, and clients without one can still use a token or stay anonymous.
//
// The key pair is reloaded when its files change (KeyPair): new connections get the new one.
func ServerTLSConfig(certFile, keyFile string, clientCAs *x509.CertPool, requireClientCert bool) (*tls.Config, error) {
	pair, err := LoadKeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("certs: load server key pair: %w", err)
	}
	cfg := &tls.Config{
		GetCertificate: pair.GetCertificate,
		MinVersion:     tls.VersionTLS12,
		NextProtos:     []string{"h2", "http/1.1"},
	}
	switch {
	case clientCAs != nil && requireClientCert:
		cfg.ClientCAs = clientCAs
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	case clientCAs != nil:
		cfg.ClientCAs = clientCAs
		cfg.ClientAuth = tls.RequestClientCert
	case requireClientCert:
		// Requiring certs without a pool to check them against would
		// accept any self-signed cert; refuse rather than mislead.
		return nil, errors.New("certs: requireClientCert needs clientCAs")
	}
	return cfg, nil
}

// ClientTLSConfig builds a client config. An empty caFile trusts the system
// roots; certFile and keyFile are both empty (no client cert) or both set.
// serverName overrides the name checked against the server's cert, which
// matters when dialing an IP or a name not in the cert. The client's key pair is reloaded when
// its files change (KeyPair): new connections present the new one.
func ClientTLSConfig(caFile, certFile, keyFile, serverName string) (*tls.Config, error) {
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS12,
		ServerName: serverName,
	}
	if caFile != "" {
		pool, err := PoolFromFile(caFile)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	if (certFile == "") != (keyFile == "") {
		return nil, errors.New("certs: client cert and key must be given together")
	}
	if certFile != "" {
		pair, err := LoadKeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("certs: load client key pair: %w", err)
		}
		cfg.GetClientCertificate = pair.GetClientCertificate
	}
	return cfg, nil
}

// PoolFromFile returns a pool holding every certificate in a PEM file.
func PoolFromFile(caFile string) (*x509.CertPool, error) {
	data, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("certs: read CA bundle: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("certs: no certificates in %s", caFile)
	}
	return pool, nil
}
