package certs

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// kubeconfigName names the single cluster, user and context written.
const kubeconfigName = "apichain"

// WriteKubeconfig writes a kubeconfig with the CA and client credentials
// embedded, so the file works on its own when copied elsewhere. It is mode
// 0600 because it contains a private key.
func WriteKubeconfig(path, serverURL string, caPEM, clientCertPEM, clientKeyPEM []byte) error {
	if serverURL == "" {
		return fmt.Errorf("certs: kubeconfig needs a server URL")
	}
	if err := os.MkdirAll(filepath.Dir(path), dirMode); err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	if err := writeFileAtomic(path, renderKubeconfig(serverURL, caPEM, clientCertPEM, clientKeyPEM), keyFileMode); err != nil {
		return fmt.Errorf("certs: write kubeconfig: %w", err)
	}
	return nil
}

// renderKubeconfig emits YAML by hand to stay within the standard library.
// Free-form strings are JSON-quoted, which is valid YAML and escapes
// anything (":", "#", newlines) that would otherwise change the meaning.
func renderKubeconfig(serverURL string, caPEM, certPEM, keyPEM []byte) []byte {
	q := func(s string) string {
		b, _ := json.Marshal(s) // marshalling a string cannot fail
		return string(b)
	}
	b64 := base64.StdEncoding.EncodeToString
	name := q(kubeconfigName)
	return []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: %[1]s
  cluster:
    server: %[2]s
    certificate-authority-data: %[3]s
users:
- name: %[1]s
  user:
    client-certificate-data: %[4]s
    client-key-data: %[5]s
contexts:
- name: %[1]s
  context:
    cluster: %[1]s
    user: %[1]s
current-context: %[1]s
preferences: {}
`, name, q(serverURL), b64(caPEM), b64(certPEM), b64(keyPEM)))
}
