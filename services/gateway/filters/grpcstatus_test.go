package filters

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/apichain/apichain/pkg/rpcstatus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func grpcRequest() *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/apichain.resource.v1.ResourceService/Get", nil)
	r.ProtoMajor, r.ProtoMinor = 2, 0
	r.Header.Set("Content-Type", "application/grpc")
	return r
}

// A filter's rejection of a gRPC call is a trailers-only gRPC answer: the status for its HTTP
// code, its message, the kube Status and, with a Retry-After, a RetryInfo in the details.
func TestWithGRPCStatus(t *testing.T) {
	h := WithGRPCStatus(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3")
		WriteError(w, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests, "too many requests, please try again later: 100% busy")
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, grpcRequest())
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Empty(t, rec.Body.Bytes())
	assert.Equal(t, "application/grpc", rec.Header().Get("Content-Type"))
	assert.Empty(t, rec.Header().Get("Retry-After"))
	assert.Equal(t, "8", rec.Header().Get("Grpc-Status")) // RESOURCE_EXHAUSTED
	assert.Equal(t, "too many requests, please try again later: 100%25 busy", rec.Header().Get("Grpc-Message"))
	raw, err := base64.RawStdEncoding.DecodeString(rec.Header().Get("Grpc-Status-Details-Bin"))
	require.NoError(t, err)
	var sp spb.Status
	require.NoError(t, proto.Unmarshal(raw, &sp))
	st := status.FromProto(&sp)
	assert.Equal(t, codes.ResourceExhausted, st.Code())
	kube := rpcstatus.ToKube(st.Err())
	assert.EqualValues(t, 429, kube.Code)
	assert.Equal(t, metav1.StatusReasonTooManyRequests, kube.Reason)
	var retry *errdetails.RetryInfo
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			retry = ri
		}
	}
	require.NotNil(t, retry)
	assert.Equal(t, 3*time.Second, retry.GetRetryDelay().AsDuration())

	// The gRPC server's own answers, and HTTP requests, pass untouched.
	ok := WithGRPCStatus(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/grpc")
		_, _ = w.Write([]byte("frame"))
	}))
	rec = httptest.NewRecorder()
	ok.ServeHTTP(rec, grpcRequest())
	assert.Equal(t, "frame", rec.Body.String())
	assert.Empty(t, rec.Header().Get("Grpc-Status"))
	rec = httptest.NewRecorder()
	WithGRPCStatus(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		WriteError(w, http.StatusForbidden, metav1.StatusReasonForbidden, "no")
	})).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/pods", nil))
	assert.Equal(t, http.StatusForbidden, rec.Code)
	assert.Contains(t, rec.Body.String(), `"reason":"Forbidden"`)
}
