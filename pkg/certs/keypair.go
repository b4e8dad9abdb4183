package certs

import (
	"crypto/tls"
	"os"
	"sync"
	"time"
)

// reloadCheck is how often, at most, a key pair looks at its files again: new connections
// present a replaced certificate within about this long.
const reloadCheck = time.Second

// KeyPair is a certificate and key kept in files and read again when either changes, as
// kube's dynamic serving and client certificates are: each new TLS connection (a server's
// handshake, a client's dial) gets the pair the files hold now, and connections already open
// keep theirs. The files are looked at, at most once a second, when a handshake needs the
// pair, so nothing runs in the background. While the files do not load (one half written, a
// key that does not match the certificate yet) the last pair that did stays in use.
type KeyPair struct {
	certFile, keyFile string

	mu      sync.Mutex
	cert    *tls.Certificate
	stamp   [2]fileStamp
	checked time.Time
	now     func() time.Time
}

// fileStamp tells a file's versions apart: an atomic replace (a rename) or an edit in place
// changes the modification time or the size.
type fileStamp struct {
	mod  time.Time
	size int64
}

func stampOf(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{mod: fi.ModTime(), size: fi.Size()}, nil
}

// LoadKeyPair reads the pair; it must load now.
func LoadKeyPair(certFile, keyFile string) (*KeyPair, error) {
	k := &KeyPair{certFile: certFile, keyFile: keyFile, now: time.Now}
	stamp, err := k.stamps()
	if err != nil {
		return nil, err
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	k.cert, k.stamp, k.checked = &cert, stamp, k.now()
	return k, nil
}

func (k *KeyPair) stamps() ([2]fileStamp, error) {
	c, err := stampOf(k.certFile)
	if err != nil {
		return [2]fileStamp{}, err
	}
	key, err := stampOf(k.keyFile)
	return [2]fileStamp{c, key}, err
}

// Current is the pair the files hold (or the last that loaded).
func (k *KeyPair) Current() *tls.Certificate {
	k.mu.Lock()
	defer k.mu.Unlock()
	if now := k.now(); now.Sub(k.checked) >= reloadCheck {
		k.checked = now
		if stamp, err := k.stamps(); err == nil && stamp != k.stamp {
			if cert, err := tls.LoadX509KeyPair(k.certFile, k.keyFile); err == nil {
				k.cert, k.stamp = &cert, stamp
			}
		}
	}
	return k.cert
}

// GetCertificate is tls.Config.GetCertificate: a server presents the current pair.
func (k *KeyPair) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return k.Current(), nil
}

// GetClientCertificate is tls.Config.GetClientCertificate: a client presents the current pair.
func (k *KeyPair) GetClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	return k.Current(), nil
}
