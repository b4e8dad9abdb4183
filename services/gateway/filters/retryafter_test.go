package filters

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var shuttingDownStatus = wantStatus{http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests,
	"The apiserver is shutting down, please try again later."}

func TestWithRetryAfter(t *testing.T) {
	cases := []struct {
		method, target string
		exempt         bool
	}{
		{"GET", "/api/v1/namespaces/ns/pods", false},
		{"POST", "/apis/apps/v1/namespaces/ns/deployments", false},
		{"GET", "/api/v1/namespaces/ns/pods?watch=true", false}, // watches too: new ones go elsewhere
		{"GET", "/version", false},
		{"GET", "/readyz", true},
		{"GET", "/readyz/ping", true},
		{"GET", "/livez", true},
		{"GET", "/healthz/etcd", true},
		{"GET", "/metrics", true},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.target, func(t *testing.T) {
			shutdown := make(chan struct{})
			h := WithRetryAfter(okHandler, shutdown)

			rec := serve(h, tc.method, tc.target)
			assert.Equal(t, http.StatusOK, rec.Code, "before the channel closes")
			assert.Empty(t, rec.Header().Get("Retry-After"))

			close(shutdown)
			rec = serve(h, tc.method, tc.target)
			if tc.exempt {
				assert.Equal(t, http.StatusOK, rec.Code)
				assert.Empty(t, rec.Header().Get("Retry-After"))
				assert.Empty(t, rec.Header().Get("Connection"))
				return
			}
			requireRecStatus(t, rec, shuttingDownStatus)
			assert.Equal(t, "5", rec.Header().Get("Retry-After"))
			assert.Equal(t, "close", rec.Header().Get("Connection"))
		})
	}
}

// Over a real connection, Connection: close makes the server hang up after the answer.
func TestWithRetryAfterClosesConnection(t *testing.T) {
	shutdown := make(chan struct{})
	close(shutdown)
	srv := httptest.NewServer(WithRetryAfter(okHandler, shutdown))
	defer srv.Close()
	client := srv.Client()
	defer client.CloseIdleConnections()

	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/v1/pods", nil)
	require.NoError(t, err)
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)

	requireStatus(t, resp.StatusCode, resp.Header, body, shuttingDownStatus)
	assert.Equal(t, "5", resp.Header.Get("Retry-After"))
	assert.True(t, resp.Close, "the client must be told the connection closes")
}

// A gRPC call turned away during shutdown is UNAVAILABLE (try elsewhere) with a RetryInfo,
// not RESOURCE_EXHAUSTED; gRPC health checks are still answered.
func TestWithRetryAfterGRPC(t *testing.T) {
	shutdown := make(chan struct{})
	close(shutdown)
	h := WithGRPCStatus(WithRetryAfter(okHandler, shutdown))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, grpcRequest())
	assert.Equal(t, "14", rec.Header().Get("Grpc-Status"), "UNAVAILABLE")
	assert.Equal(t, "The apiserver is shutting down, please try again later.", rec.Header().Get("Grpc-Message"))
	assert.NotEmpty(t, rec.Header().Get("Grpc-Status-Details-Bin"))
	assert.Equal(t, "close", rec.Header().Get("Connection"))

	health := grpcRequest()
	health.URL.Path = "/grpc.health.v1.Health/Check"
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, health)
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Empty(t, rec.Header().Get("Grpc-Status"))
}
