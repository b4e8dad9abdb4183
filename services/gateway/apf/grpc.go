package apf

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/apichain/apichain/pkg/requestinfo"
	"github.com/apichain/apichain/pkg/rpcstatus"
	"github.com/apichain/apichain/pkg/user"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// UnaryInterceptor puts unary gRPC calls through priority and fairness as their REST
// equivalents: classified by the request their message describes (the gateway's
// filters.GRPCRequestInfo resolved it), with the FlowSchema and priority level in the
// response headers, and a rejection as RESOURCE_EXHAUSTED with kube's Status and a RetryInfo.
func (c *Controller) UnaryInterceptor(defaultWait time.Duration) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		u, ok := user.From(ctx)
		ri, described := requestinfo.From(ctx)
		if !ok || !described { // not through the gateway's filters: nothing to classify by
			return handler(ctx, req)
		}
		var resp any
		var err error
		retryAfter, rejected := c.dispatch(grpcRequest(ctx, info.FullMethod), ri, u, false, defaultWait,
			func(fs *flowcontrolv1.FlowSchema, pl *flowcontrolv1.PriorityLevelConfiguration) {
				_ = grpc.SetHeader(ctx, pfHeaders(fs, pl))
			},
			func(ctx context.Context) { resp, err = handler(ctx, req) })
		if rejected {
			return nil, tooManyRequestsError(retryAfter)
		}
		return resp, err
	}
}

// StreamInterceptor does the same for streams: a watch holds its seat until the backend's
// watch is open.
func (c *Controller) StreamInterceptor(defaultWait time.Duration) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		u, ok := user.From(ss.Context())
		ri, described := requestinfo.From(ss.Context())
		if !ok || !described || !info.IsServerStream || info.IsClientStream {
			return handler(srv, ss)
		}
		var err error
		retryAfter, rejected := c.dispatch(grpcRequest(ss.Context(), info.FullMethod), ri, u, ri.Verb == "watch", defaultWait,
			func(fs *flowcontrolv1.FlowSchema, pl *flowcontrolv1.PriorityLevelConfiguration) {
				_ = ss.SetHeader(pfHeaders(fs, pl))
			},
			func(ctx context.Context) { err = handler(srv, &withContext{ServerStream: ss, ctx: ctx}) })
		if rejected {
			return tooManyRequestsError(retryAfter)
		}
		return err
	}
}

// grpcRequest is the request kube's work estimator looks at for a gRPC call.
func grpcRequest(ctx context.Context, method string) *http.Request {
	return (&http.Request{Method: http.MethodPost, URL: &url.URL{Path: method}, Header: http.Header{}}).WithContext(ctx)
}

func pfHeaders(fs *flowcontrolv1.FlowSchema, pl *flowcontrolv1.PriorityLevelConfiguration) metadata.MD {
	return metadata.Pairs(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID, string(fs.UID),
		flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID, string(pl.UID))
}

func tooManyRequestsError(retryAfter int64) error {
	kube := rpcstatus.NewStatus(http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests, tooManyRequests)
	kube.Details = &metav1.StatusDetails{RetryAfterSeconds: int32(retryAfter)}
	st := status.Convert(rpcstatus.FromKube(kube))
	if withRetry, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(time.Duration(retryAfter) * time.Second)}); err == nil {
		st = withRetry
	}
	return st.Err()
}

type withContext struct {
	grpc.ServerStream
	ctx context.Context
}

func (w *withContext) Context() context.Context { return w.ctx }
