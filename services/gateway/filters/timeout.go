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

// WithTimeout ends a non-long-running request that outlives its deadline, as kube's timeout
// filter does: a handler that has not started its answer gets a 504 Status instead; one that
// has is cut off (the connection closed, or the HTTP/2 stream reset), since a status can no
// longer be sent. The handler's answer is written through as it comes, not held: a list's
// megabytes are not copied once more. Its late writes fail. A panic in the handler is
// re-raised on the request's goroutine so panic recovery still sees it. The handler runs on
// one of timeoutWorkers' goroutines.
func WithTimeout(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A gRPC call is left to the gRPC server, which ends it at its deadline with
		// DEADLINE_EXCEEDED.
		if _, ok := r.Context().Deadline(); !ok || IsLongRunning(r) || IsGRPC(r) {
			next.ServeHTTP(w, r)
			return
		}
		tw := &timeoutWriter{w: w, h: make(http.Header)}
		done := make(chan struct{})
		panicked := make(chan any, 1)
		timeoutWorkers.Go(func() {
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
		})
		select {
		case p := <-panicked:
			panic(p)
		case <-done:
			tw.WriteHeader(http.StatusOK) // the handler's headers, if it wrote nothing
		case <-r.Context().Done():
			begun := tw.timeOut()
			if !errors.Is(r.Context().Err(), context.DeadlineExceeded) {
				return // the client went away; nobody reads an answer
			}
			if begun {
				panic(http.ErrAbortHandler) // net/http closes the connection or resets the stream, quietly
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

// timeoutWriter writes the handler's answer through until the request times out, and nothing
// after. The handler's headers are its own until its answer starts, so a timeout's 504 does
// not carry them.
type timeoutWriter struct {
	mu          sync.Mutex
	w           http.ResponseWriter
	h           http.Header
	wroteHeader bool
	timedOut    bool
}

func (t *timeoutWriter) Header() http.Header { return t.h }

// writesTo is where the answer goes (not an Unwrap: nothing may write around the timeout).
func (t *timeoutWriter) writesTo() http.ResponseWriter { return t.w }

func (t *timeoutWriter) WriteHeader(code int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.timedOut && !t.wroteHeader {
		t.writeHeaderLocked(code)
	}
}

func (t *timeoutWriter) writeHeaderLocked(code int) {
	dst := t.w.Header()
	for k, v := range t.h {
		dst[k] = v
	}
	t.wroteHeader = true
	t.w.WriteHeader(code)
}

func (t *timeoutWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.timedOut {
		return 0, http.ErrHandlerTimeout
	}
	if !t.wroteHeader {
		t.writeHeaderLocked(http.StatusOK)
	}
	return t.w.Write(p)
}

// timeOut makes the handler's further writes fail, and says whether its answer had begun.
func (t *timeoutWriter) timeOut() (begun bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.timedOut = true
	return t.wroteHeader
}
