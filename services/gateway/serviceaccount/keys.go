// Package serviceaccount issues and checks kube's bound service-account tokens in the
// gateway: TokenRequest (serviceaccounts/<name>/token), the JWT authenticator that every
// gateway replica runs with the same keys, and the OIDC discovery documents
// (/.well-known/openid-configuration, /openid/v1/jwks) that let others verify the tokens.
package serviceaccount

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/apichain/apichain/pkg/certs"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/spf13/pflag"
)

// DefaultIssuer is the issuer when none is given: the name kubeadm and kind use.
const DefaultIssuer = "https://kubernetes.default.svc.cluster.local"

// Options are kube-apiserver's service-account token flags.
type Options struct {
	// Issuers: the first issues tokens, all are accepted.
	Issuers        []string
	SigningKeyFile string
	KeyFiles       []string
	// APIAudiences are the audiences a token must have to call the API (default: the issuers).
	APIAudiences     []string
	MaxExpiration    time.Duration
	ExtendExpiration bool
	JWKSURI          string
}

// NewOptions are kube's defaults, with a default issuer.
func NewOptions() Options {
	return Options{Issuers: []string{DefaultIssuer}, ExtendExpiration: true}
}

// AddFlags registers kube's flag names.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringArrayVar(&o.Issuers, "service-account-issuer", o.Issuers,
		"Issuer of service-account tokens (iss claim); the first issues, every one given is accepted.")
	fs.StringVar(&o.SigningKeyFile, "service-account-signing-key-file", o.SigningKeyFile,
		"PEM private key (RSA or ECDSA) that signs service-account tokens (default: generated in --data-dir/pki/sa.key, shared by every gateway replica).")
	fs.StringArrayVar(&o.KeyFiles, "service-account-key-file", o.KeyFiles,
		"PEM public or private keys that verify service-account tokens; repeatable (default: the signing key's public half).")
	fs.StringSliceVar(&o.APIAudiences, "api-audiences", o.APIAudiences,
		"Audiences a token must carry to call this API (default: the service-account issuers).")
	fs.DurationVar(&o.MaxExpiration, "service-account-max-token-expiration", o.MaxExpiration,
		"Longest lifetime a TokenRequest gets; longer requests are shortened (0: no limit).")
	fs.BoolVar(&o.ExtendExpiration, "service-account-extend-token-expiration", o.ExtendExpiration,
		"Pod-bound tokens asked for 3607 s (the kubelet's default) last a year and are flagged stale after the hour, as in kube.")
	fs.StringVar(&o.JWKSURI, "service-account-jwks-uri", o.JWKSURI,
		"jwks_uri in the OIDC discovery document (default: <issuer>/openid/v1/jwks).")
}

// Validate reports bad options.
func (o *Options) Validate() error {
	if len(o.Issuers) == 0 || o.Issuers[0] == "" {
		return errors.New("--service-account-issuer is required")
	}
	if o.MaxExpiration != 0 && o.MaxExpiration < 10*time.Minute {
		return errors.New("--service-account-max-token-expiration must be at least 10m")
	}
	if o.JWKSURI != "" {
		if u, err := url.Parse(o.JWKSURI); err != nil || u.Scheme != "https" {
			return fmt.Errorf("--service-account-jwks-uri %q must be an https URL", o.JWKSURI)
		}
	}
	return nil
}

// Or fills the key files from the generated PKI.
func (o Options) Or(pki *certs.PKI) Options {
	if o.SigningKeyFile == "" {
		o.SigningKeyFile = pki.ServiceAccountKeyFile
		if len(o.KeyFiles) == 0 {
			o.KeyFiles = []string{pki.ServiceAccountPublicKeyFile}
		}
	}
	if len(o.APIAudiences) == 0 {
		o.APIAudiences = o.Issuers
	}
	return o
}

// keySet is the signing key and the verification keys, as JWKs with kube's key IDs.
type keySet struct {
	alg     jose.SignatureAlgorithm
	signing jose.JSONWebKey
	public  []jose.JSONWebKey
}

func loadKeys(o Options) (*keySet, error) {
	data, err := os.ReadFile(o.SigningKeyFile)
	if err != nil {
		return nil, fmt.Errorf("--service-account-signing-key-file: %w", err)
	}
	key, err := certs.ParsePrivateKeyPEM(data)
	if err != nil {
		return nil, fmt.Errorf("--service-account-signing-key-file: %w", err)
	}
	alg, err := algorithmOf(key.Public())
	if err != nil {
		return nil, err
	}
	kid, err := keyID(key.Public())
	if err != nil {
		return nil, err
	}
	ks := &keySet{alg: alg, signing: jose.JSONWebKey{Key: key, KeyID: kid, Algorithm: string(alg), Use: "sig"}}
	pubs := []crypto.PublicKey{key.Public()}
	for _, f := range o.KeyFiles {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("--service-account-key-file: %w", err)
		}
		keys, err := certs.ParsePublicKeysPEM(data)
		if err != nil {
			return nil, fmt.Errorf("--service-account-key-file %s: %w", f, err)
		}
		pubs = append(pubs, keys...)
	}
	seen := map[string]bool{}
	for _, pub := range pubs {
		kid, err := keyID(pub)
		if err != nil {
			return nil, err
		}
		alg, err := algorithmOf(pub)
		if err != nil {
			return nil, err
		}
		if !seen[kid] {
			seen[kid] = true
			ks.public = append(ks.public, jose.JSONWebKey{Key: pub, KeyID: kid, Algorithm: string(alg), Use: "sig"})
		}
	}
	return ks, nil
}

// algorithmOf is the JWS algorithm kube signs with for the key: RS256 for RSA, ES256/384/512
// by ECDSA curve.
func algorithmOf(pub crypto.PublicKey) (jose.SignatureAlgorithm, error) {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		return jose.RS256, nil
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return jose.ES256, nil
		case elliptic.P384():
			return jose.ES384, nil
		case elliptic.P521():
			return jose.ES512, nil
		}
	}
	return "", fmt.Errorf("service-account keys must be RSA or ECDSA P-256/384/521, not %T", pub)
}

// keyID is kube's key ID: the unpadded base64url SHA-256 of the PKIX public key, so every
// replica with the same key names it the same.
func keyID(pub crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}
