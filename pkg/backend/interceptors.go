package backend

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"os"
	runtimedebug "runtime/debug"
	"time"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/audit"
	"github.com/apichain/apichain/pkg/caller"
	"github.com/apichain/apichain/pkg/rpcstatus"
	"github.com/apichain/apichain/pkg/spans"
	"github.com/apichain/apichain/pkg/user"
	"go.opentelemetry.io/otel/attribute"
	oteltrace "go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var (
	osHostname = os.Hostname
	lookupHost = net.LookupHost
)

// longRunning are the streaming methods that shutdown ends rather than waits for.
var longRunning = map[string]bool{
	"/apichain.resource.v1.ResourceService/Watch":                    true,
	"/grpc.health.v1.Health/Watch":                                   true,
	"/grpc.reflection.v1.ServerReflection/ServerReflectionInfo":      true,
	"/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo": true,
}

// publicMethods may be called by any peer with a certificate from the CA (probes).
var publicMethods = map[string]bool{
	"/grpc.health.v1.Health/Check": true,
	"/grpc.health.v1.Health/Watch": true,
}

// peerMethods may be called by another backend: it reads the kinds this one owns (into its
// watch-fed copy of them), as itself.
var peerMethods = map[string]bool{
	resourcev1.ResourceService_Get_FullMethodName:   true,
	resourcev1.ResourceService_List_FullMethodName:  true,
	resourcev1.ResourceService_Watch_FullMethodName: true,
}

// admit accepts the gateway, and another backend's reads (probes aside), counts the request
// for draining and attaches the gateway's caller identity.
func (b *Backend) admit(ctx context.Context, method string) (context.Context, func(), error) {
	if !publicMethods[method] && !caller.IsGateway(ctx) && !(peerMethods[method] && caller.IsBackend(ctx)) {
		return nil, nil, status.Error(codes.PermissionDenied, "backends accept only the gateway's client certificate, and another backend's for reads")
	}
	ctx, err := caller.Incoming(ctx)
	if err != nil {
		return nil, nil, status.Error(codes.PermissionDenied, err.Error())
	}
	if longRunning[method] {
		return ctx, func() {}, nil
	}
	if err := b.Server.InFlight.Add(1); err != nil {
		return nil, nil, status.Error(codes.Unavailable, "server is shutting down")
	}
	return ctx, b.Server.InFlight.Done, nil
}

func (b *Backend) unaryInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
	ctx, done, err := b.admit(ctx, info.FullMethod)
	if err != nil {
		return nil, err
	}
	defer done()
	defer b.finish(ctx, info.FullMethod, time.Now(), &err)
	if name := handlerSpans[info.FullMethod]; name != "" && spans.Recording(ctx) {
		var span oteltrace.Span
		ctx, span = spans.Start(ctx, name, handlerAttributes(ctx, name, req)...)
		defer span.End()
	}
	return h(ctx, req)
}

// handlerSpans name the span of a resource method as kube's handlers name theirs; its events
// (decoding, admission, storage, the response) are kube's too.
var handlerSpans = map[string]string{
	resourcev1.ResourceService_Get_FullMethodName:              "Get",
	resourcev1.ResourceService_List_FullMethodName:             "List",
	resourcev1.ResourceService_StreamList_FullMethodName:       "List",
	resourcev1.ResourceService_Create_FullMethodName:           "Create",
	resourcev1.ResourceService_Update_FullMethodName:           "Update",
	resourcev1.ResourceService_Patch_FullMethodName:            "Patch",
	resourcev1.ResourceService_Delete_FullMethodName:           "Delete",
	resourcev1.ResourceService_DeleteCollection_FullMethodName: "Delete",
}

// handlerAttributes are the attributes of kube's handler spans that a backend knows (the
// gateway's request span has the rest: the client, URL, protocol and user agent); scope is
// kube's CleanScope.
func handlerAttributes(ctx context.Context, name string, req any) []attribute.KeyValue {
	attrs := []attribute.KeyValue{attribute.String("audit-id", audit.IDFrom(ctx))}
	if r, ok := req.(interface {
		GetRef() *resourcev1.ResourceRef
	}); ok {
		ref := r.GetRef()
		scope := "cluster"
		switch {
		case ref.GetName() != "" || name == "Create":
			scope = "resource"
		case ref.GetNamespace() != "":
			scope = "namespace"
		}
		attrs = append(attrs, attribute.String("resource", ref.GetResource()), attribute.String("scope", scope))
	}
	return attrs
}

// finish ends a request: a handler panic becomes a 500 Status for that request alone, as
// kube's panic recovery filter does (one bad request must not take the backend down), and
// the request is logged with who sent it and its audit ID, so it can be followed from the
// gateway's log.
func (b *Backend) finish(ctx context.Context, method string, start time.Time, err *error) {
	r := recover()
	debug := b.Log.Enabled(ctx, slog.LevelDebug)
	if r == nil && !debug {
		return // the common case costs nothing: no attributes built for a log nobody keeps
	}
	who := "" // probes carry no identity
	if u, ok := user.From(ctx); ok {
		who = u.Name
	}
	attrs := []any{"method", method, "user", who, "auditID", audit.IDFrom(ctx)}
	if r != nil {
		b.Log.Error("request handler panicked", append(attrs, "panic", r, "stack", string(runtimedebug.Stack()))...)
		*err = rpcstatus.FromKube(rpcstatus.NewStatus(http.StatusInternalServerError, metav1.StatusReasonInternalError,
			"This request caused apiserver to panic. Look in the logs for details."))
	}
	if debug {
		b.Log.Debug("request", append(attrs, "code", status.Code(*err).String(), "duration", time.Since(start).String())...)
	}
}

type ctxStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s ctxStream) Context() context.Context { return s.ctx }

func (b *Backend) streamInterceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) (err error) {
	ctx, done, err := b.admit(ss.Context(), info.FullMethod)
	if err != nil {
		return err
	}
	defer done()
	defer b.finish(ctx, info.FullMethod, time.Now(), &err)
	if name := handlerSpans[info.FullMethod]; name != "" && spans.Recording(ctx) {
		s := &spanStream{ServerStream: ss, ctx: ctx, name: name}
		defer s.end()
		return h(srv, s)
	}
	return h(srv, ctxStream{ServerStream: ss, ctx: ctx})
}

// spanStream starts a streaming method's handler span once its request is in, for the
// span's attributes.
type spanStream struct {
	grpc.ServerStream
	ctx  context.Context
	name string
	span oteltrace.Span
}

func (s *spanStream) Context() context.Context { return s.ctx }

func (s *spanStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil || s.span != nil {
		return err
	}
	req := m
	if l, ok := m.(*resourcev1.StreamListRequest); ok {
		req = l.GetList()
	}
	s.ctx, s.span = spans.Start(s.ctx, s.name, handlerAttributes(s.ctx, s.name, req)...)
	return nil
}

func (s *spanStream) end() {
	if s.span != nil {
		s.span.End()
	}
}
