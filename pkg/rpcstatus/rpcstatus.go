// Package rpcstatus maps between kube Status errors and gRPC statuses, and carries the
// delegation chain's "not served" answer, which is distinct from an object's 404.
package rpcstatus

import (
	"encoding/json"
	"net/http"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Domain is the ErrorInfo domain of apichain's own reasons.
const Domain = "apichain.io"

// WarningMetadataKey carries kube warnings (the HTTP Warning header's text) in gRPC response
// headers; the gateway turns each into `Warning: 299 - "<text>"`.
const WarningMetadataKey = "apichain-warning"

// AuditAnnotationMetadataKey carries the audit annotations a backend's admission added
// ("key=value"), for the gateway's audit event of the request.
const AuditAnnotationMetadataKey = "apichain-audit-annotation"

// ReasonNotServed says a server does not serve the request; the next delegate should.
const ReasonNotServed = "NOT_SERVED"

// NotServed is the error a backend returns for a request it does not serve.
func NotServed(what string) error {
	st := status.New(codes.Unimplemented, "not served here: "+what)
	st, _ = st.WithDetails(&errdetails.ErrorInfo{Reason: ReasonNotServed, Domain: Domain})
	return st.Err()
}

// IsNotServed reports whether err is a delegate's "not served" answer.
func IsNotServed(err error) bool {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.Unimplemented {
		return false
	}
	for _, d := range st.Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok && ei.GetReason() == ReasonNotServed && ei.GetDomain() == Domain {
			return true
		}
	}
	return false
}

// FromKube makes a gRPC error from a kube Status, keeping the Status as a detail.
func FromKube(s *metav1.Status) error {
	data, err := json.Marshal(s)
	if err != nil {
		return status.Error(codes.Internal, s.Message)
	}
	st := status.New(grpcCode(int(s.Code)), s.Message)
	st, _ = st.WithDetails(&resourcev1.KubeStatus{Code: s.Code, StatusJson: data})
	return st.Err()
}

// KubeJSON returns the kube Status a backend attached to err, as the JSON it encoded, and
// its HTTP code, so the gateway can write it as it is instead of decoding and encoding again.
func KubeJSON(err error) (code int, data []byte, ok bool) {
	st, _ := status.FromError(err)
	for _, d := range st.Details() {
		if ks, isKube := d.(*resourcev1.KubeStatus); isKube && ks.GetCode() != 0 && json.Valid(ks.GetStatusJson()) {
			return int(ks.GetCode()), ks.GetStatusJson(), true
		}
	}
	return 0, nil, false
}

// ToKube returns the kube Status for err: the detail when there is one, otherwise one
// derived from the gRPC code.
func ToKube(err error) *metav1.Status {
	if _, data, ok := KubeJSON(err); ok {
		out := &metav1.Status{}
		if json.Unmarshal(data, out) == nil {
			return out
		}
	}
	st, _ := status.FromError(err)
	code := httpCode(st.Code())
	return NewStatus(code, reasonFor(code), st.Message())
}

// NewStatus makes a failure Status.
func NewStatus(code int, reason metav1.StatusReason, message string) *metav1.Status {
	return &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Message: message, Reason: reason, Code: int32(code),
	}
}

func reasonFor(code int) metav1.StatusReason {
	switch code {
	case http.StatusNotFound:
		return metav1.StatusReasonNotFound
	case http.StatusConflict:
		return metav1.StatusReasonConflict
	case http.StatusBadRequest:
		return metav1.StatusReasonBadRequest
	case http.StatusUnauthorized:
		return metav1.StatusReasonUnauthorized
	case http.StatusForbidden:
		return metav1.StatusReasonForbidden
	case http.StatusTooManyRequests:
		return metav1.StatusReasonTooManyRequests
	case http.StatusServiceUnavailable:
		return metav1.StatusReasonServiceUnavailable
	case http.StatusGatewayTimeout:
		return metav1.StatusReasonTimeout
	case http.StatusMethodNotAllowed:
		return metav1.StatusReasonMethodNotAllowed
	}
	return metav1.StatusReasonInternalError
}

var grpcToHTTP = map[codes.Code]int{
	codes.OK:                 http.StatusOK,
	codes.InvalidArgument:    http.StatusBadRequest,
	codes.NotFound:           http.StatusNotFound,
	codes.AlreadyExists:      http.StatusConflict,
	codes.Aborted:            http.StatusConflict,
	codes.PermissionDenied:   http.StatusForbidden,
	codes.Unauthenticated:    http.StatusUnauthorized,
	codes.ResourceExhausted:  http.StatusTooManyRequests,
	codes.FailedPrecondition: http.StatusBadRequest,
	codes.Unimplemented:      http.StatusNotFound,
	codes.Unavailable:        http.StatusServiceUnavailable,
	codes.DeadlineExceeded:   http.StatusGatewayTimeout,
	codes.Canceled:           499,
}

func httpCode(c codes.Code) int {
	if h, ok := grpcToHTTP[c]; ok {
		return h
	}
	return http.StatusInternalServerError
}

func grpcCode(httpStatus int) codes.Code {
	switch httpStatus {
	case http.StatusBadRequest, http.StatusUnprocessableEntity, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType, http.StatusNotAcceptable:
		return codes.InvalidArgument
	case http.StatusNotFound, http.StatusGone:
		return codes.NotFound
	case http.StatusConflict:
		return codes.Aborted
	case http.StatusForbidden:
		return codes.PermissionDenied
	case http.StatusUnauthorized:
		return codes.Unauthenticated
	case http.StatusTooManyRequests:
		return codes.ResourceExhausted
	case http.StatusServiceUnavailable:
		return codes.Unavailable
	case http.StatusGatewayTimeout:
		return codes.DeadlineExceeded
	case http.StatusMethodNotAllowed:
		return codes.Unimplemented
	case http.StatusInternalServerError:
		return codes.Internal
	}
	return codes.Unknown
}
