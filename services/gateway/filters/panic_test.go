package filters

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/apichain/apichain/pkg/audit"
)

var panicStatus = wantStatus{http.StatusInternalServerError, metav1.StatusReasonInternalError,
	"This request caused apiserver to panic. Look in the logs for details."}

func panicking(v any) http.Handler {
	return http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(v) })
}

func TestWithPanicRecovery(t *testing.T) {
	type custom struct{ n int }
	cases := []struct {
		name  string
		value any
		inLog string
	}{
		{"string", "boom", "boom"},
		{"error", errors.New("bad thing"), "bad thing"},
		{"struct", custom{7}, "n:7"},
		{"typed nil pointer", (*custom)(nil), "request handler panicked"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			h := WithAuditID(WithPanicRecovery(panicking(tc.value), log))
			req := httptest.NewRequest("GET", "/api/v1/namespaces/ns/pods", nil)
			req.Header.Set(audit.IDHeader, "audit-42")
			rec := httptest.NewRecorder()
			require.NotPanics(t, func() { h.ServeHTTP(rec, req) })

			requireRecStatus(t, rec, panicStatus)
			assert.Equal(t, "audit-42", rec.Header().Get(audit.IDHeader))
			assert.Contains(t, logs.String(), "request handler panicked")
			assert.Contains(t, logs.String(), "audit-42")
			assert.Contains(t, logs.String(), tc.inLog)
		})
	}
}

func TestWithPanicRecoveryKeepsServing(t *testing.T) {
	h := WithPanicRecovery(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/boom" {
			panic("boom")
		}
		okHandler(w, r)
	}), discardLog)

	requireRecStatus(t, serve(h, "GET", "/boom"), panicStatus)
	for range 3 {
		rec := serve(h, "GET", "/fine")
		assert.Equal(t, http.StatusOK, rec.Code)
		assert.Equal(t, "ok", rec.Body.String())
	}
	requireRecStatus(t, serve(h, "GET", "/boom"), panicStatus)
}

func TestWithPanicRecoveryReraisesErrAbortHandler(t *testing.T) {
	wrapped := fmt.Errorf("aborting: %w", http.ErrAbortHandler)
	for _, v := range []error{http.ErrAbortHandler, wrapped} {
		t.Run(v.Error(), func(t *testing.T) {
			var logs bytes.Buffer
			h := WithPanicRecovery(panicking(v), slog.New(slog.NewTextHandler(&logs, nil)))
			rec := httptest.NewRecorder()
			// The very same value goes on up, for net/http to abort the response quietly.
			require.PanicsWithValue(t, v, func() {
				h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
			})
			assert.Zero(t, rec.Body.Len(), "nothing is written for an aborted response")
			assert.Empty(t, logs.String(), "an abort is not logged as a panic")
		})
	}
}
