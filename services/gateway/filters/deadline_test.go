package filters

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var timeoutStatus = wantStatus{http.StatusGatewayTimeout, metav1.StatusReasonTimeout,
	"Timeout: request did not complete within requested timeout - context deadline exceeded"}

func TestWithRequestDeadline(t *testing.T) {
	const server = time.Hour
	cases := []struct {
		name   string
		target string
		want   time.Duration // the deadline's distance from the request's start; 0: none
	}{
		{"server default", "/api/v1/namespaces/ns/pods", server},
		{"shorter client timeout wins", "/api/v1/namespaces/ns/pods?timeout=30s", 30 * time.Second},
		{"client timeout in ms", "/api/v1/namespaces/ns/pods?timeout=1500ms", 1500 * time.Millisecond},
		{"longer client timeout capped", "/api/v1/namespaces/ns/pods?timeout=2h", server},
		{"zero means the server's", "/api/v1/namespaces/ns/pods?timeout=0s", server},
		{"negative means the server's", "/api/v1/namespaces/ns/pods?timeout=-5s", server},
		{"non-resource request", "/version?timeout=10s", 10 * time.Second},
		{"watch: no deadline", "/api/v1/namespaces/ns/pods?watch=true&timeout=10s", 0},
		{"watch path: no deadline", "/api/v1/watch/namespaces/ns/pods", 0},
		{"watch ignores a bad timeout", "/api/v1/namespaces/ns/pods?watch=true&timeout=bad", 0},
		{"exec: no deadline", "/api/v1/namespaces/ns/pods/p/exec", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var deadline time.Time
			var hasDeadline bool
			h := withInfo(WithRequestDeadline(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				deadline, hasDeadline = r.Context().Deadline()
			}), server))
			before := time.Now()
			rec := serve(h, "GET", tc.target)
			after := time.Now()
			require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
			if tc.want == 0 {
				assert.False(t, hasDeadline, "deadline %v", deadline)
				return
			}
			require.True(t, hasDeadline)
			assert.False(t, deadline.Before(before.Add(tc.want)), "deadline %v too early", deadline)
			assert.False(t, deadline.After(after.Add(tc.want)), "deadline %v too late", deadline)
		})
	}
}

func TestWithRequestDeadlineBadTimeout(t *testing.T) {
	cases := []struct{ value, message string }{
		{"bad", `invalid timeout specified in the request URL - time: invalid duration "bad"`},
		{"10", `invalid timeout specified in the request URL - time: missing unit in duration "10"`},
		{"1x", `invalid timeout specified in the request URL - time: unknown unit "x" in duration "1x"`},
	}
	for _, tc := range cases {
		t.Run(tc.value, func(t *testing.T) {
			called := false
			h := withInfo(WithRequestDeadline(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
				called = true
			}), time.Minute))
			rec := serve(h, "GET", "/api/v1/namespaces/ns/pods?timeout="+tc.value)
			requireRecStatus(t, rec, wantStatus{http.StatusBadRequest, metav1.StatusReasonBadRequest, tc.message})
			assert.False(t, called)
		})
	}
}

// The deadline and the timeout filter together: a handler that outlives its deadline
// gets the client a 504, whichever of the client's and the server's timeouts is shorter.
func TestRequestDeadlineHandlerOutlivesIt(t *testing.T) {
	cases := []struct {
		name   string
		server time.Duration
		target string
	}{
		{"server timeout", 20 * time.Millisecond, "/api/v1/namespaces/ns/pods"},
		{"client timeout shorter than the server's", time.Hour, "/api/v1/namespaces/ns/pods?timeout=20ms"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			handlerCtxErr := make(chan error, 1)
			lateWrite := make(chan error, 1)
			h := withInfo(WithRequestDeadline(WithTimeout(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				<-release
				handlerCtxErr <- r.Context().Err()
				_, err := io.WriteString(w, "too late")
				lateWrite <- err
			})), tc.server))

			rec := serve(h, "GET", tc.target) // returns at the deadline, the handler still blocked
			requireRecStatus(t, rec, timeoutStatus)

			close(release)
			assert.ErrorIs(t, recv(t, handlerCtxErr, "the handler"), context.DeadlineExceeded)
			assert.ErrorIs(t, recv(t, lateWrite, "the late write"), http.ErrHandlerTimeout)
			assert.NotContains(t, rec.Body.String(), "too late")
		})
	}
}

// A watch is not timed out even when the server's timeout is long gone.
func TestRequestDeadlineWatchOutlivesServerTimeout(t *testing.T) {
	h := withInfo(WithRequestDeadline(WithTimeout(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := r.Context().Deadline(); ok {
			http.Error(w, "watch got a deadline", http.StatusInternalServerError)
			return
		}
		// Outlive the server's timeout many times over: wait on a context deadline.
		wait, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		select {
		case <-wait.Done():
		case <-r.Context().Done():
			http.Error(w, "watch cancelled", http.StatusInternalServerError)
			return
		}
		_, _ = io.WriteString(w, "still watching")
	})), time.Millisecond))

	rec := serve(h, "GET", "/api/v1/namespaces/ns/pods?watch=true")
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "still watching", rec.Body.String())
}

func TestRequestDeadlineKeepsParentCancellation(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	var ctxErr error
	h := withInfo(WithRequestDeadline(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cancel()
		<-r.Context().Done()
		ctxErr = r.Context().Err()
	}), time.Hour))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/pods", nil).WithContext(parent))
	assert.True(t, errors.Is(ctxErr, context.Canceled), "got %v", ctxErr)
}
