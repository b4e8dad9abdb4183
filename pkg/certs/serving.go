package certs

import (
	"crypto/tls"

	"github.com/spf13/pflag"
)

// ServingOptions are a TLS server's files, under kube-apiserver's flag names.
type ServingOptions struct {
	CertFile     string
	KeyFile      string
	ClientCAFile string
}

// AddFlags registers --tls-cert-file, --tls-private-key-file and --client-ca-file. server
// names the server, clients who presents client certificates, and unset (may be empty)
// says what an empty flag means.
func (o *ServingOptions) AddFlags(fs *pflag.FlagSet, server, clients, unset string) {
	fs.StringVar(&o.CertFile, "tls-cert-file", o.CertFile, "Serving certificate of the "+server+unset)
	fs.StringVar(&o.KeyFile, "tls-private-key-file", o.KeyFile, "Private key of the serving certificate"+unset)
	fs.StringVar(&o.ClientCAFile, "client-ca-file", o.ClientCAFile, "CA that signed "+clients+"' client certificates"+unset)
}

// Or fills the files o leaves empty from other (the generated ones).
func (o ServingOptions) Or(other ServingOptions) ServingOptions {
	if o.CertFile == "" {
		o.CertFile = other.CertFile
	}
	if o.KeyFile == "" {
		o.KeyFile = other.KeyFile
	}
	if o.ClientCAFile == "" {
		o.ClientCAFile = other.ClientCAFile
	}
	return o
}

// TLSConfig is the server's configuration; requireClientCert makes a client certificate
// signed by the client CA mandatory (the backends, which accept only the gateway).
func (o ServingOptions) TLSConfig(requireClientCert bool) (*tls.Config, error) {
	pool, err := PoolFromFile(o.ClientCAFile)
	if err != nil {
		return nil, err
	}
	return ServerTLSConfig(o.CertFile, o.KeyFile, pool, requireClientCert)
}
