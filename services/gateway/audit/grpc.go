package audit

import (
	"context"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/requestinfo"
	"github.com/apichain/apichain/pkg/rpcstatus"
	"google.golang.org/grpc"
)

// UnaryInterceptor completes a gRPC call's event as a REST request's: its verb and object from
// the message, the request and response bodies, and the call's kube Status when it fails
// (the HTTP exchange under gRPC always answers 200).
func UnaryInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		rec := From(ctx)
		if rec == nil {
			return handler(ctx, req)
		}
		if ri, ok := requestinfo.From(ctx); ok {
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
func StreamInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if ri, ok := requestinfo.From(ss.Context()); ok {
			From(ss.Context()).Describe(ri)
		}
		return handler(srv, ss)
	}
}
