package server

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// HTTPTransport serves an http.Handler over TLS with HTTP/1.1 and h2.
type HTTPTransport struct {
	srv    *http.Server
	ln     net.Listener
	cancel context.CancelFunc
}

// NewHTTPTransport makes a transport for handler. Request contexts derive from a base context
// that Shutdown cancels, which ends long-running requests such as watches cleanly.
func NewHTTPTransport(handler http.Handler, tlsConfig *tls.Config, log *slog.Logger) *HTTPTransport {
	base, cancel := context.WithCancel(context.Background())
	srv := &http.Server{
		Handler:           handler,
		TLSConfig:         tlsConfig,
		ReadHeaderTimeout: 32 * time.Second,
		IdleTimeout:       90 * time.Second,
		MaxHeaderBytes:    1 << 20,
		BaseContext:       func(net.Listener) context.Context { return base },
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	return &HTTPTransport{srv: srv, cancel: cancel}
}

// Serve serves ln, with TLS when a TLS config was given.
func (t *HTTPTransport) Serve(ln net.Listener) error {
	t.ln = ln
	if t.srv.TLSConfig != nil {
		return t.srv.ServeTLS(ln, "", "")
	}
	return t.srv.Serve(ln)
}

// StopListening closes the listener only.
func (t *HTTPTransport) StopListening() error {
	if t.ln == nil {
		return nil
	}
	return t.ln.Close()
}

// Shutdown ends long-running requests and waits for connections to go idle.
func (t *HTTPTransport) Shutdown(ctx context.Context) error {
	t.cancel()
	err := t.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		return t.srv.Close()
	}
	return err
}
