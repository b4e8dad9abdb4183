package filters

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// expiringCtx has a deadline that passes exactly when the test calls expire, so a test can
// let the handler get somewhere first without racing a clock.
type expiringCtx struct {
	context.Context
	done chan struct{}
}

func newExpiringCtx() *expiringCtx {
	return &expiringCtx{Context: context.Background(), done: make(chan struct{})}
}

func (c *expiringCtx) expire()                     { close(c.done) }
func (c *expiringCtx) Deadline() (time.Time, bool) { return time.Now().Add(time.Hour), true }
func (c *expiringCtx) Done() <-chan struct{}       { return c.done }
func (c *expiringCtx) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// serveCtx serves one request with ctx as its context.
func serveCtx(h http.Handler, ctx context.Context, method, target string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, target, nil).WithContext(ctx))
	return rec
}

func TestWithTimeoutPassesThrough(t *testing.T) {
	withDeadline := func(t *testing.T) context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		t.Cleanup(cancel)
		return ctx
	}
	cases := []struct {
		name        string
		ctx         func(*testing.T) context.Context
		target      string
		wantWrapped bool
	}{
		{"no deadline", func(*testing.T) context.Context { return context.Background() }, "/api/v1/namespaces/ns/pods", false},
		{"watch", withDeadline, "/api/v1/namespaces/ns/pods?watch=true", false},
		{"attach", withDeadline, "/api/v1/namespaces/ns/pods/p/attach", false},
		{"list with a deadline", withDeadline, "/api/v1/namespaces/ns/pods", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var direct bool
			h := withInfo(WithTimeout(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, direct = w.(*httptest.ResponseRecorder)
				okHandler(w, r)
			})))
			rec := serveCtx(h, tc.ctx(t), "GET", tc.target)
			assert.Equal(t, http.StatusOK, rec.Code)
			assert.Equal(t, "ok", rec.Body.String())
			assert.Equal(t, !tc.wantWrapped, direct, "did the handler get the server's writer")
		})
	}
}

func TestWithTimeoutHandlerFinishesInTime(t *testing.T) {
	cases := []struct {
		name     string
		handler  http.HandlerFunc
		wantCode int
		wantBody string
		wantHdr  map[string]string
	}{
		{
			name: "status, header and body",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("X-Foo", "bar")
				w.WriteHeader(http.StatusCreated)
				_, _ = io.WriteString(w, "made")
			},
			wantCode: http.StatusCreated, wantBody: "made", wantHdr: map[string]string{"X-Foo": "bar"},
		},
		{
			name:     "body only",
			handler:  func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "hi") },
			wantCode: http.StatusOK, wantBody: "hi",
		},
		{
			name:     "nothing written",
			handler:  func(http.ResponseWriter, *http.Request) {},
			wantCode: http.StatusOK,
		},
		{
			name: "first WriteHeader wins",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusAccepted)
				w.WriteHeader(http.StatusInternalServerError)
			},
			wantCode: http.StatusAccepted,
		},
		{
			name: "Status error",
			handler: func(w http.ResponseWriter, r *http.Request) {
				WriteError(w, http.StatusNotFound, metav1.StatusReasonNotFound, `pods "p" not found`)
			},
			wantCode: http.StatusNotFound,
			wantHdr:  map[string]string{"Content-Type": "application/json"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			rec := serveCtx(WithTimeout(tc.handler), ctx, "GET", "/api/v1/namespaces/ns/pods/p")
			assert.Equal(t, tc.wantCode, rec.Code)
			if tc.wantBody != "" {
				assert.Equal(t, tc.wantBody, rec.Body.String())
			}
			for k, v := range tc.wantHdr {
				assert.Equal(t, v, rec.Header().Get(k), k)
			}
		})
	}
}

func TestWithTimeoutAnswers504(t *testing.T) {
	ctx := newExpiringCtx()
	ready := make(chan struct{})
	release := make(chan struct{})
	late := make(chan error, 1)
	h := WithTimeout(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Leak", "yes") // set, but the answer has not started
		close(ready)
		<-release
		w.WriteHeader(http.StatusTeapot)
		_, err := io.WriteString(w, "late")
		late <- err
	}))
	go func() {
		<-ready
		ctx.expire()
	}()
	rec := serveCtx(h, ctx, "GET", "/api/v1/namespaces/ns/pods/p")

	requireRecStatus(t, rec, timeoutStatus)
	assert.Empty(t, rec.Header().Get("X-Leak"), "the abandoned handler's headers are dropped")

	close(release)
	assert.ErrorIs(t, recv(t, late, "the late write"), http.ErrHandlerTimeout)
	assert.Equal(t, http.StatusGatewayTimeout, rec.Code)
	assert.NotContains(t, rec.Body.String(), "late")
}

// An answer that had started when the deadline passed cannot become a 504: as kube does, the
// request is aborted (net/http closes the connection or resets the HTTP/2 stream), so the
// client sees a cut answer, never a whole-looking one.
func TestWithTimeoutAbortsAStartedAnswer(t *testing.T) {
	ctx := newExpiringCtx()
	wrote := make(chan struct{})
	release := make(chan struct{})
	late := make(chan error, 1)
	h := WithTimeout(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"kind":"List","items":[`)
		close(wrote)
		<-release
		_, err := io.WriteString(w, `]}`)
		late <- err
	}))
	go func() {
		<-wrote
		ctx.expire()
	}()
	rec := httptest.NewRecorder()
	func() {
		defer func() { assert.Equal(t, http.ErrAbortHandler, recover()) }()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/pods", nil).WithContext(ctx))
		t.Error("no abort")
	}()
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	assert.Equal(t, `{"kind":"List","items":[`, rec.Body.String(), "written through as it came")

	close(release)
	assert.ErrorIs(t, recv(t, late, "the late write"), http.ErrHandlerTimeout)
	assert.Equal(t, `{"kind":"List","items":[`, rec.Body.String())
}

// Through the whole chain on a real server: the client of an aborted answer gets an error,
// not a truncated body that looks complete.
func TestWithTimeoutAbortReachesTheClient(t *testing.T) {
	wrote := make(chan struct{})
	h := WithPanicRecovery(WithTimeout(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "partial")
		w.(interface{ writesTo() http.ResponseWriter }).writesTo().(http.Flusher).Flush()
		close(wrote)
		<-r.Context().Done()
	})), discardLog)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), time.Hour)
		defer cancel()
		go func() {
			<-wrote
			cancel()
		}()
		h.ServeHTTP(w, r.WithContext(&deadlineExceeded{ctx}))
	}))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/api/v1/pods")
	require.NoError(t, err)
	defer resp.Body.Close()
	_, err = io.ReadAll(resp.Body)
	assert.Error(t, err, "the body was cut off")
}

// deadlineExceeded reports a cancelled context as one whose deadline passed.
type deadlineExceeded struct{ context.Context }

func (c *deadlineExceeded) Err() error {
	if c.Context.Err() != nil {
		return context.DeadlineExceeded
	}
	return nil
}

func TestWithTimeoutClientGone(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	entered := make(chan struct{})
	release := make(chan struct{})
	exited := make(chan struct{})
	h := WithTimeout(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(exited)
		close(entered)
		<-release
		_, _ = io.WriteString(w, "nobody listens")
	}))
	go func() {
		<-entered
		cancel()
	}()
	rec := serveCtx(h, ctx, "GET", "/api/v1/namespaces/ns/pods")
	assert.Zero(t, rec.Body.Len(), "nothing is written for a client that went away")
	assert.Empty(t, rec.Header().Get("Content-Type"))
	close(release)
	recv(t, exited, "the abandoned handler")
}

func TestWithTimeoutReraisesPanic(t *testing.T) {
	for _, v := range []any{"boom", errors.New("bad"), http.ErrAbortHandler} {
		t.Run(fmt.Sprint(v), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			h := WithTimeout(panicking(v))
			// On the request's goroutine, with the value the handler panicked with and, for
			// the log, the stack where it did; net/http's abort as it is.
			defer func() {
				p := recover()
				if v == http.ErrAbortHandler {
					assert.Equal(t, v, p)
					return
				}
				require.IsType(t, handlerPanic{}, p)
				assert.Equal(t, v, p.(handlerPanic).value)
				assert.Contains(t, string(p.(handlerPanic).stack), "panicking")
			}()
			serveCtx(h, ctx, "GET", "/api/v1/pods")
			t.Fatal("no panic")
		})
	}
}

func TestWithTimeoutPanicReachesPanicRecovery(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	h := WithPanicRecovery(WithTimeout(panicking("boom")), discardLog)
	var rec *httptest.ResponseRecorder
	require.NotPanics(t, func() { rec = serveCtx(h, ctx, "GET", "/api/v1/pods") })
	requireRecStatus(t, rec, panicStatus)
}

// A handler that panics after its request timed out must not take the server down.
func TestWithTimeoutPanicAfterTimeout(t *testing.T) {
	ctx := newExpiringCtx()
	ctx.expire()
	release := make(chan struct{})
	exited := make(chan struct{})
	h := WithTimeout(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(exited)
		<-release
		panic("late panic")
	}))
	rec := serveCtx(h, ctx, "GET", "/api/v1/pods")
	requireRecStatus(t, rec, timeoutStatus)
	close(release)
	recv(t, exited, "the handler")
}
