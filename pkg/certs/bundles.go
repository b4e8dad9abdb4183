package certs

import (
	"bytes"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/apichain/apichain/pkg/user"
)

// etcdCACommonName names the CA of etcd's certificates: a CA of its own, as kubeadm makes
// it, so that no apichain user's client certificate opens etcd.
const etcdCACommonName = "apichain-etcd-ca"

// Bundles describes a deployment whose processes each get only their own credentials
// (docker compose): one directory per process under Dir, made next to a PKI.
type Bundles struct {
	Dir string
	// Backends are the backend services (core, extensions, aggregator). Each gets
	// Dir/<backend>: the cluster CA's certificate, a certificate and key of its own for
	// BackendHost (serving, and its client certificate when it reads the kinds another backend
	// owns), a client certificate for its healthcheck, and its etcd client certificate with
	// etcd's CA certificate.
	Backends    []string
	BackendHost string
	// FrontProxyClients are the backends that also get the front-proxy client certificate (the
	// aggregator, which presents it to aggregated API servers).
	FrontProxyClients []string
	// EtcdMembers are etcd's members' host names. Dir/etcd gets etcd's CA certificate and, per
	// member, a certificate and key that serve clients and peers and are a peer's client.
	EtcdMembers []string
	// NATSHosts are the NATS servers' host names (one, or a cluster's nodes): Dir/nats gets
	// one certificate and key naming them all, from the cluster CA, that serve clients and
	// are each node's client on the cluster's routes, and the CA certificate to verify routes.
	NATSHosts []string
	// APIServerURL is where the backends reach the gateways (the balancer) to review their
	// metrics endpoint's callers. When set, each backend's bundle gets a client certificate of
	// its own in user.BackendsGroup and a kubeconfig with it (delegation.kubeconfig), and
	// Dir/prometheus gets the CA certificate and a client certificate in system:monitoring, to
	// scrape every process.
	APIServerURL string
}

// PrometheusBundle is the directory of the Prometheus server that scrapes every process.
const PrometheusBundle = "prometheus"

// BalancerBundle is the directory of the balancer in front of the gateways: the cluster CA's
// certificate alone, which its health checks verify the gateways' serving certificates with.
const BalancerBundle = "balancer"

// File names in a backend's bundle.
const (
	BundleCA              = "ca.crt"
	BundleServingCert     = "tls.crt"
	BundleServingKey      = "tls.key"
	BundleHealthcheckCert = "healthcheck.crt"
	BundleHealthcheckKey  = "healthcheck.key"
	BundleEtcdCA          = "etcd-ca.crt"
	BundleEtcdClientCert  = "etcd-client.crt"
	BundleEtcdClientKey   = "etcd-client.key"
	BundleFrontProxyCert  = "front-proxy-client.crt"
	BundleFrontProxyKey   = "front-proxy-client.key"
	// The backend's identity towards the API server for its metrics endpoint's reviews.
	BundleDelegationCert       = "delegation.crt"
	BundleDelegationKey        = "delegation.key"
	BundleDelegationKubeconfig = "delegation.kubeconfig"
	// Prometheus's client certificate, in system:monitoring.
	BundleMonitoringCert = "monitoring.crt"
	BundleMonitoringKey  = "monitoring.key"
	// BundleNkey is a service's NATS nkey seed (in the data directory's pki for the gateway).
	BundleNkey = "nats.nk"
	// NATSBundle is the NATS server's directory, holding these.
	NATSBundle             = "nats"
	BundleNATSCert         = "nats.crt"
	BundleNATSKey          = "nats.key"
	BundleNATSConf         = "nats.conf"
	etcdBundleName         = "etcd"
	healthcheckCommonName  = "system:apichain:healthcheck"
	etcdClientCommonPrefix = "apichain-"
)

// EnsureBundles makes (or keeps, as EnsurePKI does) the deployment's bundles from p's CAs and
// an etcd CA kept with them.
func (p *PKI) EnsureBundles(b Bundles) error {
	ensureMu.Lock()
	defer ensureMu.Unlock()
	unlock, err := lockFile(filepath.Join(p.Dir, ".lock"))
	if err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	defer unlock()
	ca, err := LoadCA(p.CAFile, p.CAKeyFile)
	if err != nil {
		return err
	}
	etcdCA, err := ensureCA(filepath.Join(p.Dir, "etcd-ca.crt"), filepath.Join(p.Dir, "etcd-ca.key"), etcdCACommonName)
	if err != nil {
		return err
	}
	frontProxy, err := readPair(p.FrontProxyClientCertFile, p.FrontProxyClientKeyFile)
	if err != nil {
		return err
	}

	if err := copyIn(filepath.Join(b.Dir, BalancerBundle), map[string][]byte{BundleCA: ca.CertPEM}); err != nil {
		return err
	}
	etcdDir := filepath.Join(b.Dir, etcdBundleName)
	if err := copyIn(etcdDir, map[string][]byte{BundleCA: etcdCA.CertPEM}); err != nil {
		return err
	}
	for _, m := range b.EtcdMembers {
		l := leafSpec{certFile: filepath.Join(etcdDir, m+".crt"), keyFile: filepath.Join(etcdDir, m+".key"),
			commonName: m, server: true, peer: true, hosts: append([]string{m}, loopbackHosts...)}
		if err := ensureLeaf(etcdCA, l); err != nil {
			return fmt.Errorf("certs: etcd member %s: %w", m, err)
		}
	}
	if len(b.NATSHosts) > 0 {
		dir := filepath.Join(b.Dir, NATSBundle)
		if err := os.MkdirAll(dir, dirMode); err != nil {
			return fmt.Errorf("certs: %w", err)
		}
		l := leafSpec{certFile: filepath.Join(dir, BundleNATSCert), keyFile: filepath.Join(dir, BundleNATSKey),
			commonName: b.NATSHosts[0], server: true, peer: true, hosts: append(slices.Clone(b.NATSHosts), loopbackHosts...)}
		if err := ensureLeaf(ca, l); err != nil {
			return fmt.Errorf("certs: nats: %w", err)
		}
		if err := copyIn(dir, map[string][]byte{BundleCA: ca.CertPEM}); err != nil {
			return err
		}
	}
	for _, svc := range b.Backends {
		dir := filepath.Join(b.Dir, svc)
		files := map[string][]byte{BundleCA: ca.CertPEM, BundleEtcdCA: etcdCA.CertPEM}
		if slices.Contains(b.FrontProxyClients, svc) {
			files[BundleFrontProxyCert], files[BundleFrontProxyKey] = frontProxy[0], frontProxy[1]
		}
		if err := copyIn(dir, files); err != nil {
			return err
		}
		f := func(name string) string { return filepath.Join(dir, name) }
		for _, l := range []struct {
			ca *CA
			leafSpec
		}{
			{ca, leafSpec{certFile: f(BundleServingCert), keyFile: f(BundleServingKey), commonName: backendCommonName,
				server: true, peer: true, hosts: append([]string{b.BackendHost, svc}, loopbackHosts...)}},
			{ca, leafSpec{certFile: f(BundleHealthcheckCert), keyFile: f(BundleHealthcheckKey), commonName: healthcheckCommonName + ":" + svc}},
			{etcdCA, leafSpec{certFile: f(BundleEtcdClientCert), keyFile: f(BundleEtcdClientKey), commonName: etcdClientCommonPrefix + svc}},
		} {
			if err := ensureLeaf(l.ca, l.leafSpec); err != nil {
				return fmt.Errorf("certs: %s: %s: %w", svc, filepath.Base(l.certFile), err)
			}
		}
		if b.APIServerURL != "" {
			if err := ensureDelegation(ca, dir, svc, b.APIServerURL); err != nil {
				return err
			}
		}
	}
	if b.APIServerURL != "" {
		dir := filepath.Join(b.Dir, PrometheusBundle)
		if err := copyIn(dir, map[string][]byte{BundleCA: ca.CertPEM}); err != nil {
			return err
		}
		l := leafSpec{certFile: filepath.Join(dir, BundleMonitoringCert), keyFile: filepath.Join(dir, BundleMonitoringKey),
			commonName: "system:apichain:prometheus", orgs: []string{user.MonitoringGroup}}
		if err := ensureLeaf(ca, l); err != nil {
			return fmt.Errorf("certs: prometheus: %w", err)
		}
	}
	return nil
}

// ensureDelegation gives a backend's bundle its client certificate towards the API server
// (system:apichain:<svc> in user.BackendsGroup) and a kubeconfig of it for apiServerURL.
func ensureDelegation(ca *CA, dir, svc, apiServerURL string) error {
	l := leafSpec{certFile: filepath.Join(dir, BundleDelegationCert), keyFile: filepath.Join(dir, BundleDelegationKey),
		commonName: "system:apichain:" + svc, orgs: []string{user.BackendsGroup}}
	if err := ensureLeaf(ca, l); err != nil {
		return fmt.Errorf("certs: %s: delegation: %w", svc, err)
	}
	pair, err := readPair(l.certFile, l.keyFile)
	if err != nil {
		return err
	}
	return WriteKubeconfig(filepath.Join(dir, BundleDelegationKubeconfig), apiServerURL, ca.CertPEM, pair[0], pair[1])
}

// IssuePeer signs a certificate that serves and is a client too (an etcd member's, for its
// clients and its peers).
func (ca *CA) IssuePeer(commonName string, hosts []string, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: commonName},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	tmpl.DNSNames, tmpl.IPAddresses = splitHosts(hosts)
	return ca.issue(tmpl, validity)
}

// copyIn writes files into dir, leaving those already the same alone.
func copyIn(dir string, files map[string][]byte) error {
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	for name, data := range files {
		path := filepath.Join(dir, name)
		if have, err := os.ReadFile(path); err == nil && bytes.Equal(have, data) {
			continue
		}
		mode := certFileMode
		if filepath.Ext(name) == ".key" {
			mode = keyFileMode
		}
		if err := writeFileAtomic(path, data, mode); err != nil {
			return fmt.Errorf("certs: %w", err)
		}
	}
	return nil
}

func readPair(certFile, keyFile string) ([2][]byte, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return [2][]byte{}, fmt.Errorf("certs: %w", err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return [2][]byte{}, fmt.Errorf("certs: %w", err)
	}
	return [2][]byte{certPEM, keyPEM}, nil
}
