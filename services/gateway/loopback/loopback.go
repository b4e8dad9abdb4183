// Package loopback is the gateway's client of its own API, as kube-apiserver's loopback
// client: client-go's requests are served in this process through the gateway's whole handler
// chain (authentication, authorization, audit, priority and fairness, and routing to the
// backends), without TLS or a socket, as system:apiserver. The gateway's controllers that
// work on the whole chain (priority and fairness, namespace deletion) use it.
package loopback

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/apichain/apichain/pkg/user"
	"k8s.io/client-go/rest"
)

// Client is a gateway's loopback client.
type Client struct {
	handler atomic.Pointer[http.Handler]
	token   string
	user    *user.User
}

// New makes a loopback client with a fresh random token.
func New() (*Client, error) {
	b := make([]byte, 48)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	// Kube's loopback user, with a UID of this process (kube's is random per start too).
	u := &user.User{Name: "system:apiserver", UID: hex.EncodeToString(b[32:]), Groups: []string{user.SystemPrivilegedGroup, user.AllAuthenticated}}
	return &Client{token: hex.EncodeToString(b[:32]), user: u}, nil
}

// Token is the bearer token the loopback client sends; it authenticates as User.
func (c *Client) Token() string { return c.token }

// User is who the loopback client is.
func (c *Client) User() *user.User { return c.user }

// Serve sets the handler loopback requests go through (the gateway's whole chain).
func (c *Client) Serve(h http.Handler) { c.handler.Store(&h) }

// Config is client-go's configuration of the loopback client, with no client-side rate limit.
func (c *Client) Config(userAgent string) *rest.Config {
	return &rest.Config{Host: "https://loopback.apichain.invalid", BearerToken: c.token, Transport: c,
		UserAgent: userAgent, QPS: -1}
}

// RoundTrip serves req through the handler; the response streams (a watch's events reach the
// client as the handler writes them).
func (c *Client) RoundTrip(req *http.Request) (*http.Response, error) {
	hp := c.handler.Load()
	if hp == nil {
		return nil, errors.New("the gateway is not serving yet")
	}
	if req.Body == nil { // a client's request without a body; a server's has an empty one
		req = req.Clone(req.Context())
		req.Body = http.NoBody
	}
	pr, pw := io.Pipe()
	w := &pipeWriter{header: http.Header{}, body: pw, ready: make(chan struct{})}
	go func() {
		defer func() {
			w.writeHeader(http.StatusOK) // a handler that wrote nothing answered 200
			_ = pw.Close()
		}()
		(*hp).ServeHTTP(w, req)
	}()
	select {
	case <-w.ready:
	case <-req.Context().Done():
		_ = pr.CloseWithError(req.Context().Err())
		return nil, req.Context().Err()
	}
	return &http.Response{StatusCode: w.code, Status: http.StatusText(w.code), Header: w.sent, Body: pr,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, ContentLength: -1, Request: req}, nil
}

// pipeWriter is the handler's side of a loopback response.
type pipeWriter struct {
	header http.Header
	sent   http.Header // as it was when the status went out
	body   *io.PipeWriter
	once   sync.Once
	code   int
	ready  chan struct{}
}

func (w *pipeWriter) Header() http.Header { return w.header }

func (w *pipeWriter) WriteHeader(code int) { w.writeHeader(code) }

func (w *pipeWriter) writeHeader(code int) {
	w.once.Do(func() {
		w.code, w.sent = code, w.header.Clone()
		close(w.ready)
	})
}

func (w *pipeWriter) Write(p []byte) (int, error) {
	w.writeHeader(http.StatusOK)
	return w.body.Write(p)
}

// Flush: writes reach the reader at once through the pipe.
func (w *pipeWriter) Flush() {}
