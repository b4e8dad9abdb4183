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
	"github.com/apichain/apichain/pkg/user"
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
	return h(ctx, req)
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
	return h(srv, ctxStream{ServerStream: ss, ctx: ctx})
}
