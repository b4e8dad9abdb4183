// Package certs creates and loads the PKI apichain runs on: a private CA,
// serving certificates for the gateway and backends, client certificates
// for the admin user and for gateway-to-backend mutual TLS, kubeconfig
// files, and the tls.Config values servers and clients use.
//
// Keys are ECDSA P-256 and every file is PEM. Files are replaced atomically
// (temp file + rename) so a crash never leaves a half-written key behind;
// private keys are mode 0600.
package certs
