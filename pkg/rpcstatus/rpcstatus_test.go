package rpcstatus

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNotServed(t *testing.T) {
	err := NotServed("apps/v1/deployments")
	require.Error(t, err)
	st, ok := status.FromError(err)
	require.True(t, ok)
	assert.Equal(t, codes.Unimplemented, st.Code())
	assert.Contains(t, st.Message(), "apps/v1/deployments")
	assert.True(t, IsNotServed(err))
	// Wrapped by fmt.Errorf %w it is still recognised (status.FromError unwraps).
	assert.True(t, IsNotServed(fmt.Errorf("delegate: %w", err)))
}

func TestIsNotServedRejectsLookalikes(t *testing.T) {
	withInfo := func(c codes.Code, reason, domain string) error {
		st, err := status.New(c, "x").WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: domain})
		require.NoError(t, err)
		return st.Err()
	}
	tests := []struct {
		name string
		err  error
	}{
		{"nil", nil},
		{"plain error", errors.New("not served")},
		{"plain Unimplemented", status.Error(codes.Unimplemented, "unknown method Get")},
		{"NotFound", status.Error(codes.NotFound, "pods \"x\" not found")},
		{"NotFound with the NOT_SERVED reason", withInfo(codes.NotFound, ReasonNotServed, Domain)},
		{"Unimplemented with another reason", withInfo(codes.Unimplemented, "OTHER", Domain)},
		{"Unimplemented with another domain", withInfo(codes.Unimplemented, ReasonNotServed, "example.com")},
		{"kube 404 Status", FromKube(NewStatus(http.StatusNotFound, metav1.StatusReasonNotFound, "not found"))},
		{"kube 405 Status (Unimplemented code, no ErrorInfo)", FromKube(NewStatus(http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, "no"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.False(t, IsNotServed(tt.err))
		})
	}
}

func TestFromKubeToKubeRoundTrip(t *testing.T) {
	tests := []struct {
		code     int32
		reason   metav1.StatusReason
		grpcCode codes.Code
	}{
		{http.StatusBadRequest, metav1.StatusReasonBadRequest, codes.InvalidArgument},
		{http.StatusNotFound, metav1.StatusReasonNotFound, codes.NotFound},
		{http.StatusConflict, metav1.StatusReasonConflict, codes.Aborted},
		{http.StatusGone, metav1.StatusReasonExpired, codes.NotFound},
		{http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, codes.InvalidArgument},
		{http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests, codes.ResourceExhausted},
		{http.StatusInternalServerError, metav1.StatusReasonInternalError, codes.Internal},
		{http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, codes.Unavailable},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.code), func(t *testing.T) {
			retry := int32(3)
			in := &metav1.Status{
				TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
				ListMeta: metav1.ListMeta{ResourceVersion: "42"},
				Status:   metav1.StatusFailure,
				Message:  fmt.Sprintf("message for %d", tt.code),
				Reason:   tt.reason,
				Code:     tt.code,
				Details: &metav1.StatusDetails{
					Name: "web", Group: "apps", Kind: "deployments", UID: "uid-1",
					Causes:            []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Message: "bad", Field: "spec.replicas"}},
					RetryAfterSeconds: retry,
				},
			}
			err := FromKube(in)
			require.Error(t, err)
			st, ok := status.FromError(err)
			require.True(t, ok)
			assert.Equal(t, tt.grpcCode, st.Code())
			assert.Equal(t, in.Message, st.Message())
			assert.False(t, IsNotServed(err))

			assert.Equal(t, in, ToKube(err))
		})
	}
}

func TestToKubeFromPlainGRPCErrors(t *testing.T) {
	tests := []struct {
		code     codes.Code
		wantHTTP int32
		reason   metav1.StatusReason
	}{
		{codes.InvalidArgument, http.StatusBadRequest, metav1.StatusReasonBadRequest},
		{codes.FailedPrecondition, http.StatusBadRequest, metav1.StatusReasonBadRequest},
		{codes.NotFound, http.StatusNotFound, metav1.StatusReasonNotFound},
		{codes.AlreadyExists, http.StatusConflict, metav1.StatusReasonConflict},
		{codes.Aborted, http.StatusConflict, metav1.StatusReasonConflict},
		{codes.PermissionDenied, http.StatusForbidden, metav1.StatusReasonForbidden},
		{codes.Unauthenticated, http.StatusUnauthorized, metav1.StatusReasonUnauthorized},
		{codes.ResourceExhausted, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests},
		{codes.Unimplemented, http.StatusNotFound, metav1.StatusReasonNotFound},
		{codes.Unavailable, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable},
		{codes.DeadlineExceeded, http.StatusGatewayTimeout, metav1.StatusReasonTimeout},
		{codes.Canceled, 499, metav1.StatusReasonInternalError},
		{codes.Internal, http.StatusInternalServerError, metav1.StatusReasonInternalError},
		{codes.Unknown, http.StatusInternalServerError, metav1.StatusReasonInternalError},
		{codes.DataLoss, http.StatusInternalServerError, metav1.StatusReasonInternalError},
	}
	for _, tt := range tests {
		t.Run(tt.code.String(), func(t *testing.T) {
			got := ToKube(status.Error(tt.code, "boom"))
			assert.Equal(t, NewStatus(int(tt.wantHTTP), tt.reason, "boom"), got)
		})
	}

	t.Run("non-gRPC error", func(t *testing.T) {
		got := ToKube(errors.New("disk on fire"))
		assert.Equal(t, int32(http.StatusInternalServerError), got.Code)
		assert.Equal(t, metav1.StatusReasonInternalError, got.Reason)
		assert.Equal(t, "disk on fire", got.Message)
		assert.Equal(t, metav1.StatusFailure, got.Status)
		assert.Equal(t, "Status", got.Kind)
	})

	t.Run("not served", func(t *testing.T) {
		got := ToKube(NotServed("x/v1/things"))
		assert.Equal(t, int32(http.StatusNotFound), got.Code)
		assert.Equal(t, metav1.StatusReasonNotFound, got.Reason)
	})
}

func TestFromKubeCodes(t *testing.T) {
	tests := []struct {
		http int
		want codes.Code
	}{
		{http.StatusRequestEntityTooLarge, codes.InvalidArgument},
		{http.StatusUnsupportedMediaType, codes.InvalidArgument},
		{http.StatusNotAcceptable, codes.InvalidArgument},
		{http.StatusForbidden, codes.PermissionDenied},
		{http.StatusUnauthorized, codes.Unauthenticated},
		{http.StatusGatewayTimeout, codes.DeadlineExceeded},
		{http.StatusMethodNotAllowed, codes.Unimplemented},
		{http.StatusTeapot, codes.Unknown},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.http), func(t *testing.T) {
			err := FromKube(NewStatus(tt.http, metav1.StatusReasonUnknown, "m"))
			assert.Equal(t, tt.want, status.Code(err))
			// The detail still carries the exact HTTP code.
			assert.Equal(t, int32(tt.http), ToKube(err).Code)
		})
	}
}

func TestNewStatus(t *testing.T) {
	got := NewStatus(http.StatusConflict, metav1.StatusReasonAlreadyExists, "exists")
	assert.Equal(t, &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Message: "exists", Reason: metav1.StatusReasonAlreadyExists, Code: http.StatusConflict,
	}, got)
}

// The gateway writes the backend's encoding as it is: KubeJSON hands back exactly the bytes
// FromKube made, and nothing for errors that carry no kube Status.
func TestKubeJSONIsTheBackendsEncoding(t *testing.T) {
	st := NewStatus(http.StatusConflict, metav1.StatusReasonConflict, `configmaps "x" already exists`)
	st.Details = &metav1.StatusDetails{Name: "x", Kind: "configmaps"}
	want, err := json.Marshal(st)
	require.NoError(t, err)

	code, data, ok := KubeJSON(FromKube(st))
	require.True(t, ok)
	assert.Equal(t, http.StatusConflict, code)
	assert.Equal(t, string(want), string(data))

	for _, err := range []error{nil, errors.New("plain"), status.Error(codes.Unavailable, "down"), NotServed("v1")} {
		_, _, ok := KubeJSON(err)
		assert.False(t, ok, "%v", err)
	}
}
