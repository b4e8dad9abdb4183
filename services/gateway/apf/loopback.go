package apf

import (
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
)

// loopback is an http.RoundTripper that serves client-go's requests in this process, through
// the gateway's own handler chain (authentication, authorization, audit and routing to the
// backends), as kube-apiserver's loopback client does over its port, without TLS or a socket.
// Responses stream: a watch's events reach the client as the handler writes them.
type loopback struct {
	handler atomic.Pointer[http.Handler]
}

func (l *loopback) RoundTrip(req *http.Request) (*http.Response, error) {
	hp := l.handler.Load()
	if hp == nil {
		return nil, errors.New("the gateway is not serving yet")
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
