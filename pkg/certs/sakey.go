package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
)

// ensureServiceAccountKey creates the service-account token signing key and its public half
// once. Like the CA it is never replaced: every token issued so far is signed with it.
func (p *PKI) ensureServiceAccountKey() error {
	have, err := fileExists(p.ServiceAccountKeyFile)
	if err != nil {
		return err
	}
	if have {
		data, err := os.ReadFile(p.ServiceAccountKeyFile)
		if err != nil {
			return err
		}
		key, err := parseKeyPEM(data)
		if err != nil {
			return fmt.Errorf("%s: %w", p.ServiceAccountKeyFile, err)
		}
		if ok, err := fileExists(p.ServiceAccountPublicKeyFile); err != nil || ok {
			return err
		}
		return writePublicKey(p.ServiceAccountPublicKeyFile, key)
	}
	key, err := newKey()
	if err != nil {
		return err
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(p.ServiceAccountKeyFile, keyPEM, keyFileMode); err != nil {
		return err
	}
	return writePublicKey(p.ServiceAccountPublicKeyFile, key)
}

func writePublicKey(path string, key crypto.Signer) error {
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return err
	}
	return writeFileAtomic(path, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), certFileMode)
}

// ParsePrivateKeyPEM reads the first private key in data (PKCS#8, SEC1 or PKCS#1).
func ParsePrivateKeyPEM(data []byte) (crypto.Signer, error) { return parseKeyPEM(data) }

// ParsePublicKeysPEM reads every RSA or ECDSA key in data, as kube's
// --service-account-key-file does: public keys (PKIX or PKCS#1) and private keys, whose
// public halves count.
func ParsePublicKeysPEM(data []byte) ([]crypto.PublicKey, error) {
	var out []crypto.PublicKey
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		var key any
		var err error
		switch block.Type {
		case "PUBLIC KEY":
			key, err = x509.ParsePKIXPublicKey(block.Bytes)
		case "RSA PUBLIC KEY":
			key, err = x509.ParsePKCS1PublicKey(block.Bytes)
		case pemTypePKCS8, pemTypeEC, pemTypeRSA:
			var signer crypto.Signer
			signer, err = parseKeyPEM(pem.EncodeToMemory(block))
			if err == nil {
				key = signer.Public()
			}
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", block.Type, err)
		}
		switch key.(type) {
		case *rsa.PublicKey, *ecdsa.PublicKey:
			out = append(out, key)
		default:
			return nil, fmt.Errorf("%T is neither an RSA nor an ECDSA key", key)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no RSA or ECDSA key found")
	}
	return out, nil
}
