package certs

import (
	"crypto/x509"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// pkiFiles lists every file EnsurePKI maintains.
func pkiFiles(p *PKI) []string {
	return []string{p.CAFile, p.CAKeyFile, p.ServingCertFile, p.ServingKeyFile, p.AdminCertFile,
		p.AdminKeyFile, p.GatewayClientCertFile, p.GatewayClientKeyFile, p.BackendCertFile, p.BackendKeyFile}
}

func snapshot(t *testing.T, p *PKI) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, f := range pkiFiles(p) {
		m[f] = string(mustRead(t, f))
	}
	return m
}

func TestEnsurePKICreates(t *testing.T) {
	dir := t.TempDir()
	p, err := EnsurePKI(dir, []string{"api.example.com", "192.0.2.10"}, []string{"core.internal"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Dir != filepath.Join(dir, "pki") {
		t.Errorf("Dir = %q", p.Dir)
	}
	ca := mustReadCert(t, p.CAFile)
	if !ca.IsCA {
		t.Fatal("CA file is not a CA")
	}
	serving := mustReadCert(t, p.ServingCertFile)
	for _, h := range []string{"localhost", "127.0.0.1", "::1", "api.example.com", "192.0.2.10"} {
		verify(t, ca, serving, h, x509.ExtKeyUsageServerAuth)
	}
	backend := mustReadCert(t, p.BackendCertFile)
	for _, h := range []string{"localhost", "127.0.0.1", "::1", "core.internal"} {
		verify(t, ca, backend, h, x509.ExtKeyUsageServerAuth)
	}
	if backend.VerifyHostname("api.example.com") == nil {
		t.Error("backend cert should not carry gateway hosts")
	}
	admin := mustReadCert(t, p.AdminCertFile)
	verify(t, ca, admin, "", x509.ExtKeyUsageClientAuth)
	if admin.Subject.CommonName != "kubernetes-admin" || !slices.Equal(admin.Subject.Organization, []string{"system:masters"}) {
		t.Errorf("admin subject = %v", admin.Subject)
	}
	gw := mustReadCert(t, p.GatewayClientCertFile)
	verify(t, ca, gw, "", x509.ExtKeyUsageClientAuth)
	if gw.Subject.CommonName != "system:apichain:gateway" {
		t.Errorf("gateway subject = %v", gw.Subject)
	}

	for _, f := range []string{p.CAKeyFile, p.ServingKeyFile, p.AdminKeyFile, p.GatewayClientKeyFile, p.BackendKeyFile, p.ServiceAccountKeyFile} {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s mode = %v, want 0600", f, st.Mode().Perm())
		}
	}
	entries, _ := os.ReadDir(p.Dir)
	for _, e := range entries {
		if filepath.Ext(e.Name()) != ".crt" && filepath.Ext(e.Name()) != ".key" && e.Name() != "sa.pub" && e.Name() != ".lock" {
			t.Errorf("stray file %s", e.Name())
		}
	}
}

func TestEnsurePKIIdempotent(t *testing.T) {
	dir := t.TempDir()
	p, err := EnsurePKI(dir, []string{"a.example.com"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, p)
	// Same hosts, and a subset of them: nothing may change.
	for _, hosts := range [][]string{{"a.example.com"}, nil, {"localhost", "A.example.com"}} {
		if _, err := EnsurePKI(dir, hosts, nil); err != nil {
			t.Fatal(err)
		}
		for f, content := range snapshot(t, p) {
			if content != before[f] {
				t.Errorf("hosts %v: %s changed", hosts, filepath.Base(f))
			}
		}
	}
}

func TestEnsurePKIReissuesServingForNewHosts(t *testing.T) {
	dir := t.TempDir()
	p, err := EnsurePKI(dir, []string{"a.example.com"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, p)
	if _, err := EnsurePKI(dir, []string{"a.example.com", "10.1.2.3"}, nil); err != nil {
		t.Fatal(err)
	}
	after := snapshot(t, p)
	for _, f := range pkiFiles(p) {
		changed := after[f] != before[f]
		wantChanged := f == p.ServingCertFile || f == p.ServingKeyFile
		if changed != wantChanged {
			t.Errorf("%s changed=%v, want %v", filepath.Base(f), changed, wantChanged)
		}
	}
	serving := mustReadCert(t, p.ServingCertFile)
	verify(t, mustReadCert(t, p.CAFile), serving, "10.1.2.3", x509.ExtKeyUsageServerAuth)
}

func TestEnsurePKIRepairs(t *testing.T) {
	dir := t.TempDir()
	p, err := EnsurePKI(dir, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Corrupt one leaf and delete another's key: both get reissued.
	if err := os.WriteFile(p.AdminCertFile, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(p.BackendKeyFile); err != nil {
		t.Fatal(err)
	}
	if _, err := EnsurePKI(dir, nil, nil); err != nil {
		t.Fatal(err)
	}
	ca := mustReadCert(t, p.CAFile)
	verify(t, ca, mustReadCert(t, p.AdminCertFile), "", x509.ExtKeyUsageClientAuth)
	if _, err := ServerTLSConfig(p.BackendCertFile, p.BackendKeyFile, nil, false); err != nil {
		t.Fatalf("backend pair unusable: %v", err)
	}

	// A new CA (old cert removed) invalidates every leaf.
	if err := os.Remove(p.CAFile); err != nil {
		t.Fatal(err)
	}
	if _, err := EnsurePKI(dir, nil, nil); err != nil {
		t.Fatal(err)
	}
	newCA := mustReadCert(t, p.CAFile)
	if newCA.Equal(ca) {
		t.Fatal("CA was not recreated")
	}
	verify(t, newCA, mustReadCert(t, p.ServingCertFile), "localhost", x509.ExtKeyUsageServerAuth)
	verify(t, newCA, mustReadCert(t, p.GatewayClientCertFile), "", x509.ExtKeyUsageClientAuth)
}

func TestEnsurePKIRefusesCAWithoutKey(t *testing.T) {
	dir := t.TempDir()
	p, err := EnsurePKI(dir, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(p.CAKeyFile); err != nil {
		t.Fatal(err)
	}
	if _, err := EnsurePKI(dir, nil, nil); err == nil {
		t.Fatal("EnsurePKI replaced a CA whose key was missing")
	}
}

func TestEnsurePKIConcurrent(t *testing.T) {
	dir := t.TempDir()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() { _, errs[i] = EnsurePKI(dir, nil, nil) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	p := newPKI(dir)
	ca := mustReadCert(t, p.CAFile)
	verify(t, ca, mustReadCert(t, p.ServingCertFile), "localhost", x509.ExtKeyUsageServerAuth)
	verify(t, ca, mustReadCert(t, p.AdminCertFile), "", x509.ExtKeyUsageClientAuth)
}
