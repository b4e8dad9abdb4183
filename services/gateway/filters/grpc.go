package filters

import (
	"context"
	"path"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/apichain/apichain/pkg/requestinfo"
	"github.com/apichain/apichain/pkg/rpcstatus"
	"github.com/apichain/apichain/services/gateway/authz"
)

// A gRPC call on the gateway's port passes the HTTP filters like any request, but its
// resource is in its message, which the filters do not read. The gRPC server finishes what
// they started, in the same order, as interceptors:
//   - GRPCRequestInfo: the request info, resolved from the message
//     (requestinfo.ResolveGRPC), replaces the path's, so the audit event, priority and
//     fairness, authorization and the request metrics all see the resource;
//   - the audit and priority-and-fairness interceptors (their packages);
//   - GRPCAuthorization: the authorization WithAuthorization leaves to it.

// GRPCRequestInfo resolves a call's request info from its message. A server stream's first
// message (a watch's request) is read before the handler runs, and handed to it.
func GRPCRequestInfo() (grpc.UnaryServerInterceptor, grpc.StreamServerInterceptor) {
	unary := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		describe(ctx, info.FullMethod, req)
		return handler(ctx, req)
	}
	stream := func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		var first proto.Message
		if info.IsServerStream && !info.IsClientStream {
			first = newInput(info.FullMethod)
		}
		// A client stream's messages are each their own request (reflection), and a message of
		// no registered type cannot be read: the method describes those calls.
		if first == nil {
			describe(ss.Context(), info.FullMethod, nil)
			return handler(srv, ss)
		}
		if err := ss.RecvMsg(first); err != nil {
			return err
		}
		describe(ss.Context(), info.FullMethod, first)
		return handler(srv, &firstMessage{ServerStream: ss, first: first})
	}
	return unary, stream
}

// describe replaces the request info the path gave (a POST to the method) with the message's,
// in place: the HTTP filters around the gRPC server hold the same one (the metrics label the
// request with it once it is answered).
func describe(ctx context.Context, method string, msg any) {
	if info, ok := requestinfo.From(ctx); ok {
		*info = *requestinfo.ResolveGRPC(method, msg)
	}
}

// GRPCAuthorization rejects a call the authorizer does not allow with PERMISSION_DENIED and
// kube's 403 Status in its details, exactly as WithAuthorization answers the REST request.
func GRPCAuthorization(a authz.Authorizer) (grpc.UnaryServerInterceptor, grpc.StreamServerInterceptor) {
	unary := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if st := authorize(ctx, a); st != nil {
			return nil, rpcstatus.FromKube(st)
		}
		return handler(ctx, req)
	}
	stream := func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if st := authorize(ss.Context(), a); st != nil {
			return rpcstatus.FromKube(st)
		}
		return handler(srv, ss)
	}
	return unary, stream
}

// firstMessage gives the request read before the handler ran to the handler's first RecvMsg.
type firstMessage struct {
	grpc.ServerStream
	first proto.Message // nil once given
}

func (f *firstMessage) RecvMsg(m any) error {
	if f.first == nil {
		return f.ServerStream.RecvMsg(m)
	}
	pm, ok := m.(proto.Message)
	if !ok || pm.ProtoReflect().Descriptor() != f.first.ProtoReflect().Descriptor() {
		return status.Errorf(codes.Internal, "unexpected message type %T", m)
	}
	proto.Merge(pm, f.first)
	f.first = nil
	return nil
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
