package certs

import (
	"errors"
	"fmt"
	"github.com/apichain/apichain/pkg/topology"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// RenewBefore is how long before its expiry EnsurePKI and EnsureBundles reissue a leaf
// certificate, so a start (or an init-pki run) in its last weeks does not leave a service with
// an expiring one; init-pki's --renew-before sets it (a year or more renews every leaf now).
// The processes reload reissued files without a restart.
var RenewBefore = 30 * 24 * time.Hour

const (
	caValidity   = 10 * 365 * 24 * time.Hour
	leafValidity = 365 * 24 * time.Hour

	caCommonName      = "apichain-ca"
	servingCommonName = "apichain"
	backendCommonName = topology.BackendServerName
	// AdminUser and AdminGroup make the admin cert a cluster superuser
	// under Kubernetes RBAC conventions.
	AdminUser  = "kubernetes-admin"
	AdminGroup = "system:masters"
	// GatewayUser is the identity the gateway presents to backends.
	GatewayUser = "system:apichain:gateway"
	// FrontProxyClientName is the front-proxy client certificate's common name (kubeadm's),
	// the one name the requestheader authenticators allow by default.
	FrontProxyClientName   = "front-proxy-client"
	frontProxyCACommonName = "apichain-front-proxy-ca"
)

// loopbackHosts are always in serving certs so local clients and health
// checks can connect without extra configuration.
var loopbackHosts = []string{"localhost", "127.0.0.1", "::1"}

// PKI is the set of files apichain keeps in its data directory. Dir is the
// directory holding them (<data dir>/pki); the other fields are file paths.
type PKI struct {
	Dir                   string
	CAFile                string
	CAKeyFile             string
	ServingCertFile       string
	ServingKeyFile        string
	AdminCertFile         string
	AdminKeyFile          string
	GatewayClientCertFile string
	GatewayClientKeyFile  string
	BackendCertFile       string
	BackendKeyFile        string
	// FrontProxyCAFile signs the front-proxy client certificate the aggregator presents to
	// aggregated API servers (kube's --requestheader-client-ca-file); a CA of its own, as
	// kubeadm makes it, so no user's client certificate can speak for others.
	FrontProxyCAFile         string
	FrontProxyCAKeyFile      string
	FrontProxyClientCertFile string
	FrontProxyClientKeyFile  string
	// ServiceAccountKeyFile signs service-account tokens; ServiceAccountPublicKeyFile
	// verifies them.
	ServiceAccountKeyFile       string
	ServiceAccountPublicKeyFile string
}

func newPKI(dataDir string) *PKI {
	d := filepath.Join(dataDir, "pki")
	f := func(name string) string { return filepath.Join(d, name) }
	return &PKI{
		Dir:                         d,
		CAFile:                      f("ca.crt"),
		CAKeyFile:                   f("ca.key"),
		ServingCertFile:             f("serving.crt"),
		ServingKeyFile:              f("serving.key"),
		AdminCertFile:               f("admin.crt"),
		AdminKeyFile:                f("admin.key"),
		GatewayClientCertFile:       f("gateway-client.crt"),
		GatewayClientKeyFile:        f("gateway-client.key"),
		BackendCertFile:             f("backend.crt"),
		BackendKeyFile:              f("backend.key"),
		FrontProxyCAFile:            f("front-proxy-ca.crt"),
		FrontProxyCAKeyFile:         f("front-proxy-ca.key"),
		FrontProxyClientCertFile:    f("front-proxy-client.crt"),
		FrontProxyClientKeyFile:     f("front-proxy-client.key"),
		ServiceAccountKeyFile:       f("sa.key"),
		ServiceAccountPublicKeyFile: f("sa.pub"),
	}
}

// ensureMu serialises EnsurePKI within a process; the file lock covers
// other processes.
var ensureMu sync.Mutex

// EnsurePKI creates dir/pki with a CA and all leaf certificates, reusing
// whatever is already there and still fits. The CA is never replaced once
// it exists, because kubeconfigs and peers already trust it. A leaf is
// reissued when it is missing, unreadable, not signed by the CA, close to
// expiry, or (for serving certs) lacks a host asked for now.
func EnsurePKI(dir string, servingHosts, backendHosts []string) (*PKI, error) {
	p := newPKI(dir)
	if err := os.MkdirAll(p.Dir, dirMode); err != nil {
		return nil, fmt.Errorf("certs: %w", err)
	}
	ensureMu.Lock()
	defer ensureMu.Unlock()
	unlock, err := lockFile(filepath.Join(p.Dir, ".lock"))
	if err != nil {
		return nil, fmt.Errorf("certs: %w", err)
	}
	defer unlock()

	ca, err := ensureCA(p.CAFile, p.CAKeyFile, caCommonName)
	if err != nil {
		return nil, err
	}
	for _, l := range p.leaves(servingHosts, backendHosts) {
		if err := ensureLeaf(ca, l); err != nil {
			return nil, fmt.Errorf("certs: %s: %w", filepath.Base(l.certFile), err)
		}
	}
	frontProxyCA, err := ensureCA(p.FrontProxyCAFile, p.FrontProxyCAKeyFile, frontProxyCACommonName)
	if err != nil {
		return nil, err
	}
	frontProxyClient := leafSpec{certFile: p.FrontProxyClientCertFile, keyFile: p.FrontProxyClientKeyFile, commonName: FrontProxyClientName}
	if err := ensureLeaf(frontProxyCA, frontProxyClient); err != nil {
		return nil, fmt.Errorf("certs: %s: %w", filepath.Base(frontProxyClient.certFile), err)
	}
	if err := p.ensureServiceAccountKey(); err != nil {
		return nil, fmt.Errorf("certs: service-account key: %w", err)
	}
	return p, nil
}

// ensureCA loads a CA, creating it only when no CA certificate exists.
// A key without a cert is the leftover of an interrupted first run (the key
// is written first) and is safe to replace; a cert without its key is not.
func ensureCA(certFile, keyFile, commonName string) (*CA, error) {
	haveCert, err := fileExists(certFile)
	if err != nil {
		return nil, err
	}
	if haveCert {
		ca, err := LoadCA(certFile, keyFile)
		if err != nil {
			return nil, err
		}
		if time.Now().After(ca.Cert.NotAfter) {
			return nil, fmt.Errorf("certs: CA %s expired at %s; remove %s to start over",
				certFile, ca.Cert.NotAfter.Format(time.RFC3339), filepath.Dir(certFile))
		}
		return ca, nil
	}
	ca, err := NewCA(commonName, caValidity)
	if err != nil {
		return nil, err
	}
	keyPEM, err := encodeKey(ca.Key)
	if err != nil {
		return nil, err
	}
	if err := writeFileAtomic(keyFile, keyPEM, keyFileMode); err != nil {
		return nil, fmt.Errorf("certs: write CA key: %w", err)
	}
	if err := writeFileAtomic(certFile, ca.CertPEM, certFileMode); err != nil {
		return nil, fmt.Errorf("certs: write CA cert: %w", err)
	}
	return ca, nil
}

func (p *PKI) leaves(servingHosts, backendHosts []string) []leafSpec {
	withLoopback := func(hosts []string) []string {
		return append(append([]string{}, loopbackHosts...), hosts...)
	}
	return []leafSpec{
		{certFile: p.ServingCertFile, keyFile: p.ServingKeyFile, commonName: servingCommonName,
			server: true, hosts: withLoopback(servingHosts)},
		{certFile: p.BackendCertFile, keyFile: p.BackendKeyFile, commonName: backendCommonName,
			server: true, peer: true, hosts: withLoopback(backendHosts)},
		{certFile: p.AdminCertFile, keyFile: p.AdminKeyFile, commonName: AdminUser,
			orgs: []string{AdminGroup}},
		{certFile: p.GatewayClientCertFile, keyFile: p.GatewayClientKeyFile, commonName: GatewayUser},
	}
}

// ensureLeaf keeps l's files if they still satisfy l, otherwise reissues.
func ensureLeaf(ca *CA, l leafSpec) error {
	ok, err := l.usable(ca)
	if err != nil || ok {
		return err
	}
	var certPEM, keyPEM []byte
	switch {
	case l.peer:
		certPEM, keyPEM, err = ca.IssuePeer(l.commonName, l.hosts, leafValidity)
	case l.server:
		certPEM, keyPEM, err = ca.IssueServing(l.commonName, l.hosts, leafValidity)
	default:
		certPEM, keyPEM, err = ca.IssueClient(l.commonName, l.orgs, leafValidity)
	}
	if err != nil {
		return err
	}
	// Key first: a crash in between leaves a mismatched pair, which the
	// next run detects and reissues.
	if err := writeFileAtomic(l.keyFile, keyPEM, keyFileMode); err != nil {
		return err
	}
	return writeFileAtomic(l.certFile, certPEM, certFileMode)
}

// readLeaf returns nil, nil when either file is missing.
func readLeaf(l leafSpec) ([]byte, []byte, error) {
	certPEM, err := os.ReadFile(l.certFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err := os.ReadFile(l.keyFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return certPEM, keyPEM, nil
}
