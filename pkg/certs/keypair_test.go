package certs

import (
	"crypto/tls"
	"os"
	"testing"
	"time"
)

// replacePair writes a new pair for the backend's names over the files, as a renewal does
// (each file replaced atomically), and returns its serial.
func replacePair(t *testing.T, p *PKI, certFile, keyFile string) string {
	t.Helper()
	ca, err := LoadCA(p.CAFile, p.CAKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.IssuePeer("apichain-backend", []string{"core.apichain.internal"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeFileAtomic(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := writeFileAtomic(certFile, certPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	return mustParseCert(t, certPEM).SerialNumber.String()
}

func serialOf(c *tls.Certificate) string {
	if c == nil || c.Leaf == nil {
		return ""
	}
	return c.Leaf.SerialNumber.String()
}

// A key pair reads its files again once they change, at most once per reloadCheck, and
// keeps the last good pair while they do not load.
func TestKeyPairReloads(t *testing.T) {
	p, _ := mtlsSetup(t)
	k, err := LoadKeyPair(p.BackendCertFile, p.BackendKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	k.now = func() time.Time { return now }
	first := serialOf(k.Current())
	if first != mustReadCert(t, p.BackendCertFile).SerialNumber.String() {
		t.Fatalf("the pair is the files': %s", first)
	}

	second := replacePair(t, p, p.BackendCertFile, p.BackendKeyFile)
	if got := serialOf(k.Current()); got != first {
		t.Fatalf("looked again before reloadCheck passed: %s", got)
	}
	now = now.Add(reloadCheck)
	if got := serialOf(k.Current()); got != second {
		t.Fatalf("after reloadCheck the new pair is served: got %s, want %s", got, second)
	}

	// A certificate half written (or without its new key yet) does not load: the last
	// good pair stays.
	if err := os.WriteFile(p.BackendCertFile, []byte("-----BEGIN CERTIFICATE-----\nMIIB"), 0o644); err != nil {
		t.Fatal(err)
	}
	now = now.Add(reloadCheck)
	if got := serialOf(k.Current()); got != second {
		t.Fatalf("a broken file keeps the last pair: got %s", got)
	}
	third := replacePair(t, p, p.BackendCertFile, p.BackendKeyFile)
	now = now.Add(reloadCheck)
	if got := serialOf(k.Current()); got != third {
		t.Fatalf("once the files load again they are served: got %s, want %s", got, third)
	}
}

// A server and a client built from files present the new pair on new connections once the
// files are replaced.
func TestTLSConfigsReloadKeyPairs(t *testing.T) {
	p, pool := mtlsSetup(t)
	server, err := ServerTLSConfig(p.BackendCertFile, p.BackendKeyFile, pool, true)
	if err != nil {
		t.Fatal(err)
	}
	client, err := ClientTLSConfig(p.CAFile, p.GatewayClientCertFile, p.GatewayClientKeyFile, "core.apichain.internal")
	if err != nil {
		t.Fatal(err)
	}
	state, serverErr, clientErr := handshake(t, server, client)
	if serverErr != nil || clientErr != nil {
		t.Fatalf("handshake: server %v, client %v", serverErr, clientErr)
	}
	oldClient := state.PeerCertificates[0].SerialNumber.String()

	newServer := replacePair(t, p, p.BackendCertFile, p.BackendKeyFile)
	newClient := replacePair(t, p, p.GatewayClientCertFile, p.GatewayClientKeyFile)
	if newClient == oldClient {
		t.Fatal("a new serial")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var clientState tls.ConnectionState
		client.VerifyConnection = func(cs tls.ConnectionState) error { clientState = cs; return nil }
		state, serverErr, clientErr = handshake(t, server, client)
		if serverErr != nil || clientErr != nil {
			t.Fatalf("handshake while the files change: server %v, client %v", serverErr, clientErr)
		}
		if state.PeerCertificates[0].SerialNumber.String() == newClient && clientState.PeerCertificates[0].SerialNumber.String() == newServer {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("new handshakes present the new pairs within seconds")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
