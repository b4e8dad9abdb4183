package audit

import (
	"context"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/requestinfo"
	"github.com/apichain/apichain/pkg/rpcstatus"
	"google.golang.org/grpc"
)

// Resolver is the request info of a gRPC call.
type Resolver func(fullMethod string, msg any) *requestinfo.RequestInfo

// UnaryInterceptor completes a gRPC call's event as a REST request's: its verb and object from
// the message, the request and response bodies, and the call's kube Status when it fails
// (the HTTP exchange under gRPC always answers 200).
func UnaryInterceptor(resolve Resolver) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		rec := From(ctx)
		if rec == nil {
			return handler(ctx, req)
		}
		if ri := resolve(info.FullMethod, req); ri != nil {
			rec.Describe(ri)
		}
		if b, ok := req.(interface{ GetBody() *resourcev1.Body }); ok {
			rec.RequestObject(b.GetBody().GetContentType(), b.GetBody().GetData())
		}
		resp, err := handler(ctx, req)
		if err != nil {
			rec.Result(rpcstatus.ToKube(err))
		} else if b, ok := resp.(interface{ GetBody() *resourcev1.Body }); ok {
			rec.ResponseObject(b.GetBody().GetContentType(), b.GetBody().GetData())
		}
		return resp, err
	}
}

// StreamInterceptor names a watch's verb and object.
func StreamInterceptor(resolve Resolver) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		rec := From(ss.Context())
		if rec == nil {
			return handler(srv, ss)
		}
		return handler(srv, &describingStream{ServerStream: ss, rec: rec, resolve: resolve, method: info.FullMethod})
	}
}

type describingStream struct {
	grpc.ServerStream
	rec     *Record
	resolve Resolver
	method  string
	done    bool
}

func (s *describingStream) RecvMsg(m any) error {
	err := s.ServerStream.RecvMsg(m)
	if err == nil && !s.done {
		s.done = true
		if ri := s.resolve(s.method, m); ri != nil {
			s.rec.Describe(ri)
		}
	}
	return err
}
