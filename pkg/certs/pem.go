package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
)

const (
	pemTypeCert  = "CERTIFICATE"
	pemTypePKCS8 = "PRIVATE KEY"
	pemTypeEC    = "EC PRIVATE KEY"
	pemTypeRSA   = "RSA PRIVATE KEY"
)

func newKey() (*ecdsa.PrivateKey, error) {
	return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
}

func encodeCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: pemTypeCert, Bytes: der})
}

// encodeKey uses PKCS#8 because it is the one format every consumer
// (Go, OpenSSL, kubectl) reads regardless of key algorithm.
func encodeKey(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemTypePKCS8, Bytes: der}), nil
}

// parseCertPEM returns the first certificate in data.
func parseCertPEM(data []byte) (*x509.Certificate, error) {
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return nil, errors.New("no CERTIFICATE block found")
		}
		if block.Type == pemTypeCert {
			return x509.ParseCertificate(block.Bytes)
		}
	}
}

// parseKeyPEM accepts PKCS#8, SEC1 and PKCS#1 so keys made by other tools
// (e.g. a CA supplied by an operator) can be loaded too.
func parseKeyPEM(data []byte) (crypto.Signer, error) {
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return nil, errors.New("no private key block found")
		}
		var (
			key any
			err error
		)
		switch block.Type {
		case pemTypePKCS8:
			key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
		case pemTypeEC:
			key, err = x509.ParseECPrivateKey(block.Bytes)
		case pemTypeRSA:
			key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
		default:
			continue // e.g. "EC PARAMETERS" emitted by openssl ecparam
		}
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", block.Type, err)
		}
		signer, ok := key.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("%T is not a signing key", key)
		}
		return signer, nil
	}
}

// keyMatchesCert reports whether key is the private half of cert.
func keyMatchesCert(key crypto.Signer, cert *x509.Certificate) bool {
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	return ok && pub.Equal(cert.PublicKey)
}
