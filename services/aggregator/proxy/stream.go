package proxy

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"sort"
	"sync"
	"time"

	proxyv1 "github.com/apichain/apichain/gen/apichain/proxy/v1"
)

// streamWriter is the http.ResponseWriter the upgrade-aware proxy writes to: the response head
// and body go back to the gateway as exchange messages, each write at once (a watch's events
// must not wait in a buffer), and a hijacked connection becomes raw bytes both ways.
type streamWriter struct {
	stream proxyv1.ProxyService_ExchangeServer
	header http.Header

	mu          sync.Mutex // the proxy and a hijacked connection's copier send concurrently
	wroteHeader bool
	hijacked    bool
	err         error // the first failed send
}

func newStreamWriter(stream proxyv1.ProxyService_ExchangeServer) *streamWriter {
	return &streamWriter{stream: stream, header: http.Header{}}
}

func (w *streamWriter) send(m *proxyv1.ExchangeResponse) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if err := w.stream.Send(m); err != nil {
		w.err = err
	}
	return w.err
}

func (w *streamWriter) Header() http.Header { return w.header }

func (w *streamWriter) WriteHeader(code int) {
	if w.wroteHeader || w.hijacked {
		return
	}
	w.wroteHeader = true
	names := make([]string, 0, len(w.header))
	for name := range w.header {
		names = append(names, name)
	}
	sort.Strings(names)
	head := &proxyv1.ResponseHead{Status: int32(code)}
	for _, name := range names {
		head.Headers = append(head.Headers, &proxyv1.Header{Name: name, Values: w.header[name]})
	}
	_ = w.send(&proxyv1.ExchangeResponse{Part: &proxyv1.ExchangeResponse_Head{Head: head}})
}

func (w *streamWriter) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if len(p) == 0 {
		return 0, w.err
	}
	// The message owns its bytes: the proxy reuses its buffer.
	if err := w.send(&proxyv1.ExchangeResponse{Part: &proxyv1.ExchangeResponse_Data{Data: append([]byte(nil), p...)}}); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush does nothing: every write is sent when it is made.
func (w *streamWriter) Flush() {}

// Hijack turns the exchange into a raw connection: the gateway hijacks its client's.
func (w *streamWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if w.wroteHeader || w.hijacked {
		return nil, nil, errors.New("the response was already started")
	}
	w.hijacked = true
	if err := w.send(&proxyv1.ExchangeResponse{Part: &proxyv1.ExchangeResponse_Head{Head: &proxyv1.ResponseHead{Raw: true}}}); err != nil {
		return nil, nil, err
	}
	c := &streamConn{w: w}
	return c, bufio.NewReadWriter(bufio.NewReader(c), bufio.NewWriter(c)), nil
}

// finish ends the exchange: a response that wrote nothing still sends its head.
func (w *streamWriter) finish() error {
	if !w.wroteHeader && !w.hijacked {
		w.WriteHeader(http.StatusOK)
	}
	return w.err
}

// streamConn is a hijacked exchange as a net.Conn: reads are the gateway's data messages,
// writes go back as data messages.
type streamConn struct {
	w   *streamWriter
	buf []byte
}

func (c *streamConn) Read(p []byte) (int, error) {
	for len(c.buf) == 0 {
		m, err := c.w.stream.Recv()
		if err != nil {
			return 0, err
		}
		c.buf = m.GetData()
	}
	n := copy(p, c.buf)
	c.buf = c.buf[n:]
	return n, nil
}

func (c *streamConn) Write(p []byte) (int, error) {
	if err := c.w.send(&proxyv1.ExchangeResponse{Part: &proxyv1.ExchangeResponse_Data{Data: append([]byte(nil), p...)}}); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Close does nothing: the exchange ends when the handler returns.
func (c *streamConn) Close() error                     { return nil }
func (c *streamConn) LocalAddr() net.Addr              { return streamAddr{} }
func (c *streamConn) RemoteAddr() net.Addr             { return streamAddr{} }
func (c *streamConn) SetDeadline(time.Time) error      { return nil }
func (c *streamConn) SetReadDeadline(time.Time) error  { return nil }
func (c *streamConn) SetWriteDeadline(time.Time) error { return nil }

type streamAddr struct{}

func (streamAddr) Network() string { return "grpc" }
func (streamAddr) String() string  { return "gateway" }
