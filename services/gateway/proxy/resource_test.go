package proxy

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/apichain/apichain/pkg/routing"
	"github.com/apichain/apichain/pkg/rpcstatus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestIsAPIPath(t *testing.T) {
	tests := []struct {
		path string
		want bool
	}{
		{"/api", true},
		{"/api/", true},
		{"/api/v1/namespaces", true},
		{"/apis", true},
		{"/apis/", true},
		{"/apis/apps/v1", true},
		{"/openapi/v2", true},
		{"/openapi/v3", true},
		{"/openapi/v3/apis/apps/v1", true},
		{"/apiary", false},
		{"/apis-and-more", false},
		{"/openapi", false},
		{"/openapiv2", false},
		{"/healthz", false},
		{"/version", false},
		{"/", false},
		{"", false},
		{"api", false},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			assert.Equal(t, tt.want, IsAPIPath(tt.path))
		})
	}
}

func TestNotFound(t *testing.T) {
	for _, path := range []string{"/api/v2", "/apis/nope.example.com", "/apis", "/openapi/v3/apis/x/v1"} {
		t.Run(path, func(t *testing.T) {
			rec := httptest.NewRecorder()
			NotFound(rec, httptest.NewRequest(http.MethodGet, path, nil))
			assert.Equal(t, http.StatusNotFound, rec.Code)
			assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
			var st metav1.Status
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &st), rec.Body.String())
			assert.Equal(t, metav1.Status{
				TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
				Status:   metav1.StatusFailure,
				Message:  "the server could not find the requested resource",
				Reason:   metav1.StatusReasonNotFound,
				Code:     http.StatusNotFound,
			}, st)
		})
	}
	for _, path := range []string{"/", "/foo", "/apiary", "/openapi", "/ui/index.html"} {
		t.Run(path, func(t *testing.T) {
			rec := httptest.NewRecorder()
			NotFound(rec, httptest.NewRequest(http.MethodGet, path, nil))
			assert.Equal(t, http.StatusNotFound, rec.Code)
			assert.Contains(t, rec.Header().Get("Content-Type"), "text/plain")
			assert.Equal(t, "404 page not found\n", rec.Body.String())
		})
	}
}

func TestWriteError(t *testing.T) {
	conflict := rpcstatus.NewStatus(http.StatusConflict, metav1.StatusReasonConflict, "the object has been modified")
	lost := rpcstatus.NewStatus(http.StatusGatewayTimeout, metav1.StatusReasonTimeout, "etcd lost the answer to a write")
	lost.Details = &metav1.StatusDetails{RetryAfterSeconds: 2}
	tests := []struct {
		name       string
		err        error
		code       int32
		reason     metav1.StatusReason
		retryAfter string
	}{
		{"end of chain", routing.ErrEndOfChain, http.StatusNotFound, metav1.StatusReasonNotFound, ""},
		{"chain incomplete", routing.ErrChainIncomplete, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "1"},
		{"backend kube Status", rpcstatus.FromKube(conflict), http.StatusConflict, metav1.StatusReasonConflict, ""},
		{"backend Status saying when to retry", rpcstatus.FromKube(lost), http.StatusGatewayTimeout, metav1.StatusReasonTimeout, "2"},
		{"unreachable backend", status.Error(codes.Unavailable, "connection refused"), http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "1"},
		{"throttled backend", status.Error(codes.ResourceExhausted, "slow down"), http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests, "1"},
		{"plain error", errors.New("boom"), http.StatusInternalServerError, metav1.StatusReasonInternalError, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			WriteError(rec, tt.err)
			assert.Equal(t, int(tt.code), rec.Code)
			assert.Equal(t, tt.retryAfter, rec.Header().Get("Retry-After"))
			var st metav1.Status
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &st), rec.Body.String())
			assert.Equal(t, tt.code, st.Code)
			assert.Equal(t, tt.reason, st.Reason)
			assert.Equal(t, "Status", st.Kind)
		})
	}
}
