package filters

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WithTimeout answers 504 when a non-long-running request outlives its deadline; the
// handler's late writes are discarded. A panic in the handler is re-raised on the request's
// goroutine so panic recovery still sees it.
func WithTimeout(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A gRPC call is left to the gRPC server, which ends it at its deadline with
		// DEADLINE_EXCEEDED (a buffered answer would also lose its trailers).
		if _, ok := r.Context().Deadline(); !ok || IsLongRunning(r) || IsGRPC(r) {
			next.ServeHTTP(w, r)
			return
		}
		tw := &timeoutWriter{w: w, h: make(http.Header)}
		done := make(chan struct{})
		panicked := make(chan any, 1)
		go func() {
			defer func() {
				if p := recover(); p != nil {
					if err, ok := p.(error); ok && errors.Is(err, http.ErrAbortHandler) {
						panicked <- p
					} else {
						panicked <- handlerPanic{value: p, stack: debug.Stack()} // where it happened, for the log
					}
					return
				}
				close(done)
			}()
			next.ServeHTTP(tw, r)
		}()
		select {
		case p := <-panicked:
			panic(p)
		case <-done:
			tw.flush()
		case <-r.Context().Done():
			tw.markTimedOut()
			if !errors.Is(r.Context().Err(), context.DeadlineExceeded) {
				return // the client went away; nobody reads an answer
			}
			WriteError(w, http.StatusGatewayTimeout, metav1.StatusReasonTimeout,
				"Timeout: request did not complete within requested timeout - "+r.Context().Err().Error())
		}
	})
}

// handlerPanic is a panic of the handler's goroutine, raised again in the request's with the
// stack where it happened.
type handlerPanic struct {
	value any
	stack []byte
}

func (p handlerPanic) String() string { return fmt.Sprintf("%v\n%s", p.value, p.stack) }

// timeoutWriter buffers the response until the handler finishes, so a timeout can still
// replace it with a 504.
type timeoutWriter struct {
	mu       sync.Mutex
	w        http.ResponseWriter
	h        http.Header
	buf      []byte // appended to, not a bytes.Buffer: its growth zeroes what it then copies (a list's megabytes)
	code     int
	timedOut bool
}

func (t *timeoutWriter) Header() http.Header { return t.h }

// writesTo is where the buffered response goes (not an Unwrap: nothing may bypass the buffer).
func (t *timeoutWriter) writesTo() http.ResponseWriter { return t.w }

func (t *timeoutWriter) WriteHeader(code int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.code == 0 && !t.timedOut {
		t.code = code
	}
}

func (t *timeoutWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.timedOut {
		return 0, http.ErrHandlerTimeout
	}
	if t.code == 0 {
		t.code = http.StatusOK
	}
	t.buf = append(t.buf, p...)
	return len(p), nil
}

// markTimedOut makes the handler's further writes fail.
func (t *timeoutWriter) markTimedOut() {
	t.mu.Lock()
	t.timedOut = true
	t.mu.Unlock()
}

func (t *timeoutWriter) flush() {
	t.mu.Lock()
	defer t.mu.Unlock()
	dst := t.w.Header()
	for k, v := range t.h {
		dst[k] = v
	}
	if t.code == 0 {
		t.code = http.StatusOK
	}
	t.w.WriteHeader(t.code)
	_, _ = t.w.Write(t.buf)
}
