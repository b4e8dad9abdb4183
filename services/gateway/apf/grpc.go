package apf

import (
	"context"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/apichain/apichain/pkg/requestinfo"
	"github.com/apichain/apichain/pkg/rpcstatus"
	"github.com/apichain/apichain/pkg/user"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/emptypb"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Resolver describes a gRPC call as the REST request it stands for, from its method and
// request message (nil when it does not stand for one).
type Resolver func(fullMethod string, msg any) *requestinfo.RequestInfo

// UnaryInterceptor puts unary gRPC calls through priority and fairness as their REST
// equivalents: classified by the request their message describes (other services' calls as
// non-resource POSTs to their method), with the FlowSchema and priority level in the
// response headers, and a rejection as RESOURCE_EXHAUSTED with kube's Status and a RetryInfo.
func (c *Controller) UnaryInterceptor(resolve Resolver, defaultWait time.Duration) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		u, ok := user.From(ctx)
		if !ok { // not through the gateway's filters: nothing to classify by
			return handler(ctx, req)
		}
		var resp any
		var err error
		retryAfter, rejected := c.dispatch(grpcRequest(ctx, info.FullMethod), describe(resolve, info.FullMethod, req), u, false, defaultWait,
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

// StreamInterceptor does the same for streams, which the first message describes: a watch
// holds its seat until the backend's watch is open.
func (c *Controller) StreamInterceptor(resolve Resolver, defaultWait time.Duration) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		u, ok := user.From(ss.Context())
		if !ok || !info.IsServerStream || info.IsClientStream {
			return handler(srv, ss)
		}
		first := &firstMessage{ServerStream: ss}
		if err := first.receive(info.FullMethod); err != nil {
			return err
		}
		var msg any
		if first.msg != nil {
			msg = first.msg
		}
		ri := describe(resolve, info.FullMethod, msg)
		var err error
		retryAfter, rejected := c.dispatch(grpcRequest(ss.Context(), info.FullMethod), ri, u, ri.Verb == "watch", defaultWait,
			func(fs *flowcontrolv1.FlowSchema, pl *flowcontrolv1.PriorityLevelConfiguration) {
				_ = ss.SetHeader(pfHeaders(fs, pl))
			},
			func(ctx context.Context) { err = handler(srv, &withContext{firstMessage: first, ctx: ctx}) })
		if rejected {
			return tooManyRequestsError(retryAfter)
		}
		return err
	}
}

func describe(resolve Resolver, method string, msg any) *requestinfo.RequestInfo {
	if ri := resolve(method, msg); ri != nil {
		return ri
	}
	return &requestinfo.RequestInfo{Path: method, Verb: "post"}
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

// firstMessage reads a server stream's request before the handler does (to classify the
// call), and gives it to the handler's first RecvMsg.
type firstMessage struct {
	grpc.ServerStream
	raw      []byte
	msg      proto.Message // the request decoded, nil if its type is not registered
	consumed bool
}

// receive reads the first message as bytes (an Empty keeps every field as unknown) and
// decodes it as the method's input type.
func (f *firstMessage) receive(method string) error {
	var raw emptypb.Empty
	if err := f.ServerStream.RecvMsg(&raw); err != nil {
		return err
	}
	f.raw = raw.ProtoReflect().GetUnknown()
	if msg := newInput(method); msg != nil && proto.Unmarshal(f.raw, msg) == nil {
		f.msg = msg
	}
	return nil
}

func (f *firstMessage) RecvMsg(m any) error {
	if f.consumed {
		return f.ServerStream.RecvMsg(m)
	}
	f.consumed = true
	pm, ok := m.(proto.Message)
	if !ok {
		return status.Errorf(codes.Internal, "unexpected message type %T", m)
	}
	return proto.Unmarshal(f.raw, pm)
}

// newInput is a new request message of the gRPC method /<service>/<method>.
func newInput(fullMethod string) proto.Message {
	service, method := path.Split(strings.TrimPrefix(fullMethod, "/"))
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(strings.TrimSuffix(service, "/")))
	if err != nil {
		return nil
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return nil
	}
	md := sd.Methods().ByName(protoreflect.Name(method))
	if md == nil {
		return nil
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByName(md.Input().FullName())
	if err != nil {
		return nil
	}
	return mt.New().Interface()
}

type withContext struct {
	*firstMessage
	ctx context.Context
}

func (w *withContext) Context() context.Context { return w.ctx }
