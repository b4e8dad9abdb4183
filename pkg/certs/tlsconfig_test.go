package certs

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"testing"
	"time"
)

// handshake runs a TLS handshake over net.Pipe. The server writes one byte
// after a successful handshake and the client reads it, because under TLS
// 1.3 a rejected client certificate only surfaces on the client's first read.
func handshake(t *testing.T, serverCfg, clientCfg *tls.Config) (serverState tls.ConnectionState, serverErr, clientErr error) {
	t.Helper()
	sc, cc := net.Pipe()
	deadline := time.Now().Add(10 * time.Second)
	_ = sc.SetDeadline(deadline)
	_ = cc.SetDeadline(deadline)
	srv, cli := tls.Server(sc, serverCfg), tls.Client(cc, clientCfg)
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Close the raw pipe: tls.Conn.Close would block sending
		// close_notify into an unbuffered pipe nobody reads.
		defer sc.Close()
		if serverErr = srv.Handshake(); serverErr == nil {
			serverState = srv.ConnectionState()
			_, serverErr = srv.Write([]byte{1})
		}
	}()
	clientErr = cli.Handshake()
	if clientErr == nil {
		_, clientErr = io.ReadFull(cli, make([]byte, 1))
	}
	cc.Close()
	<-done
	return serverState, serverErr, clientErr
}

func mtlsSetup(t *testing.T) (*PKI, *x509.CertPool) {
	t.Helper()
	p, err := EnsurePKI(t.TempDir(), nil, []string{"core.apichain.internal"})
	if err != nil {
		t.Fatal(err)
	}
	pool, err := PoolFromFile(p.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	return p, pool
}

func TestMutualTLS(t *testing.T) {
	p, pool := mtlsSetup(t)
	serverCfg, err := ServerTLSConfig(p.BackendCertFile, p.BackendKeyFile, pool, true)
	if err != nil {
		t.Fatal(err)
	}
	if serverCfg.MinVersion != tls.VersionTLS12 || serverCfg.ClientAuth != tls.RequireAndVerifyClientCert {
		t.Fatalf("MinVersion=%x ClientAuth=%v", serverCfg.MinVersion, serverCfg.ClientAuth)
	}
	clientCfg, err := ClientTLSConfig(p.CAFile, p.GatewayClientCertFile, p.GatewayClientKeyFile, "core.apichain.internal")
	if err != nil {
		t.Fatal(err)
	}
	clientCfg.NextProtos = []string{"h2"}
	state, serr, cerr := handshake(t, serverCfg, clientCfg)
	if serr != nil || cerr != nil {
		t.Fatalf("mTLS failed: server=%v client=%v", serr, cerr)
	}
	if len(state.PeerCertificates) == 0 || state.PeerCertificates[0].Subject.CommonName != GatewayUser {
		t.Fatalf("server saw peer %v", state.PeerCertificates)
	}
	if state.NegotiatedProtocol != "h2" {
		t.Errorf("ALPN = %q, want h2", state.NegotiatedProtocol)
	}
}

func TestMutualTLSRejectsMissingClientCert(t *testing.T) {
	p, pool := mtlsSetup(t)
	serverCfg, err := ServerTLSConfig(p.BackendCertFile, p.BackendKeyFile, pool, true)
	if err != nil {
		t.Fatal(err)
	}
	clientCfg, err := ClientTLSConfig(p.CAFile, "", "", "localhost")
	if err != nil {
		t.Fatal(err)
	}
	_, serr, cerr := handshake(t, serverCfg, clientCfg)
	if serr == nil || cerr == nil {
		t.Fatalf("want both sides to fail: server=%v client=%v", serr, cerr)
	}
}

func TestMutualTLSRejectsForeignClientCert(t *testing.T) {
	p, pool := mtlsSetup(t)
	serverCfg, err := ServerTLSConfig(p.BackendCertFile, p.BackendKeyFile, pool, true)
	if err != nil {
		t.Fatal(err)
	}
	other, err := EnsurePKI(t.TempDir(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	clientCfg, err := ClientTLSConfig(p.CAFile, other.GatewayClientCertFile, other.GatewayClientKeyFile, "localhost")
	if err != nil {
		t.Fatal(err)
	}
	if _, serr, _ := handshake(t, serverCfg, clientCfg); serr == nil {
		t.Fatal("server accepted a client cert from another CA")
	}
}

func TestOptionalClientCert(t *testing.T) {
	p, pool := mtlsSetup(t)
	serverCfg, err := ServerTLSConfig(p.ServingCertFile, p.ServingKeyFile, pool, false)
	if err != nil {
		t.Fatal(err)
	}
	if serverCfg.ClientAuth != tls.RequestClientCert {
		t.Fatalf("ClientAuth = %v", serverCfg.ClientAuth)
	}
	anon, err := ClientTLSConfig(p.CAFile, "", "", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if _, serr, cerr := handshake(t, serverCfg, anon); serr != nil || cerr != nil {
		t.Fatalf("anonymous client: server=%v client=%v", serr, cerr)
	}
	admin, err := ClientTLSConfig(p.CAFile, p.AdminCertFile, p.AdminKeyFile, "localhost")
	if err != nil {
		t.Fatal(err)
	}
	state, serr, cerr := handshake(t, serverCfg, admin)
	if serr != nil || cerr != nil {
		t.Fatalf("admin client: server=%v client=%v", serr, cerr)
	}
	if len(state.PeerCertificates) == 0 || state.PeerCertificates[0].Subject.CommonName != AdminUser {
		t.Fatalf("server saw peer %v", state.PeerCertificates)
	}
	// A certificate from another CA completes the handshake, as in kube: authentication
	// verifies it and answers 401.
	other, err := EnsurePKI(t.TempDir(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := ClientTLSConfig(p.CAFile, other.AdminCertFile, other.AdminKeyFile, "localhost")
	if err != nil {
		t.Fatal(err)
	}
	state, serr, cerr = handshake(t, serverCfg, stranger)
	if serr != nil || cerr != nil || len(state.VerifiedChains) != 0 || len(state.PeerCertificates) == 0 {
		t.Fatalf("stranger client: server=%v client=%v verified=%d", serr, cerr, len(state.VerifiedChains))
	}
}

func TestClientRejectsWrongServerName(t *testing.T) {
	p, pool := mtlsSetup(t)
	serverCfg, err := ServerTLSConfig(p.BackendCertFile, p.BackendKeyFile, pool, false)
	if err != nil {
		t.Fatal(err)
	}
	clientCfg, err := ClientTLSConfig(p.CAFile, "", "", "evil.example.com")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, cerr := handshake(t, serverCfg, clientCfg); cerr == nil {
		t.Fatal("client accepted a cert for the wrong name")
	}
}

func TestTLSConfigErrors(t *testing.T) {
	p, _ := mtlsSetup(t)
	if _, err := ServerTLSConfig(p.ServingCertFile, p.ServingKeyFile, nil, true); err == nil {
		t.Error("requireClientCert without CAs accepted")
	}
	cfg, err := ServerTLSConfig(p.ServingCertFile, p.ServingKeyFile, nil, false)
	if err != nil || cfg.ClientAuth != tls.NoClientCert || len(cfg.NextProtos) != 2 {
		t.Errorf("cfg=%+v err=%v", cfg, err)
	}
	if _, err := ClientTLSConfig(p.CAFile, p.AdminCertFile, "", ""); err == nil {
		t.Error("cert without key accepted")
	}
	if _, err := PoolFromFile(p.ServingKeyFile); err == nil {
		t.Error("PoolFromFile accepted a file without certificates")
	}
	if _, err := ServerTLSConfig(p.ServingCertFile, p.AdminKeyFile, nil, false); err == nil {
		t.Error("mismatched key pair accepted")
	}
}
