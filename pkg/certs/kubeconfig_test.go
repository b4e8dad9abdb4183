package certs

import (
	"bytes"
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

func TestWriteKubeconfigLoads(t *testing.T) {
	p, err := EnsurePKI(t.TempDir(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, certPEM, keyPEM := mustRead(t, p.CAFile), mustRead(t, p.AdminCertFile), mustRead(t, p.AdminKeyFile)
	path := filepath.Join(t.TempDir(), "sub", "kubeconfig")
	const server = "https://127.0.0.1:6443"
	if err := WriteKubeconfig(path, server, caPEM, certPEM, keyPEM); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want 0600", st.Mode().Perm())
	}

	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CurrentContext != "apichain" {
		t.Errorf("current-context = %q", cfg.CurrentContext)
	}
	ctx := cfg.Contexts["apichain"]
	if ctx == nil || ctx.Cluster != "apichain" || ctx.AuthInfo != "apichain" {
		t.Fatalf("context = %+v", ctx)
	}
	cluster := cfg.Clusters["apichain"]
	if cluster == nil || cluster.Server != server || !bytes.Equal(cluster.CertificateAuthorityData, caPEM) {
		t.Fatalf("cluster = %+v", cluster)
	}
	user := cfg.AuthInfos["apichain"]
	if user == nil || !bytes.Equal(user.ClientCertificateData, certPEM) || !bytes.Equal(user.ClientKeyData, keyPEM) {
		t.Fatal("user credentials differ")
	}
	if err := clientcmd.Validate(*cfg); err != nil {
		t.Fatalf("invalid kubeconfig: %v", err)
	}
}

// TestKubeconfigAgainstServer connects with client-go's own TLS setup from
// the kubeconfig to a server built with ServerTLSConfig, as kubectl would.
func TestKubeconfigAgainstServer(t *testing.T) {
	p, pool := mtlsSetup(t)
	serverCfg, err := ServerTLSConfig(p.ServingCertFile, p.ServingKeyFile, pool, false)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.PeerCertificates) == 0 {
			http.Error(w, "no client cert", http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte(r.TLS.PeerCertificates[0].Subject.CommonName))
	}))
	// httptest's StartTLS would put its own certificate first; serve the config as it is.
	srv.Listener = tls.NewListener(srv.Listener, serverCfg)
	srv.Start()
	defer srv.Close()
	srv.URL = "https://" + srv.Listener.Addr().String()

	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := WriteKubeconfig(path, srv.URL, mustRead(t, p.CAFile), mustRead(t, p.AdminCertFile), mustRead(t, p.AdminKeyFile)); err != nil {
		t.Fatal(err)
	}
	restCfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	client, err := rest.HTTPClientFor(restCfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	_, _ = body.ReadFrom(resp.Body)
	if resp.StatusCode != http.StatusOK || body.String() != AdminUser {
		t.Fatalf("status %d body %q", resp.StatusCode, body.String())
	}
	if resp.ProtoMajor != 2 {
		t.Errorf("proto = %s, want HTTP/2", resp.Proto)
	}
}

func TestRenderKubeconfigQuotesServer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	const server = "https://example.com:6443/#odd: path"
	if err := WriteKubeconfig(path, server, []byte("ca"), []byte("c"), []byte("k")); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Clusters["apichain"].Server; got != server {
		t.Fatalf("server = %q", got)
	}
	if err := WriteKubeconfig(path, "", nil, nil, nil); err == nil {
		t.Fatal("empty server accepted")
	}
}
