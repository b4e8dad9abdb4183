package proxy

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/apichain/apichain/pkg/rpcstatus"
	"github.com/apichain/apichain/services/gateway/audit"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// warnings collects the kube warnings backends send with their answers during one request.
type warnings struct {
	mu   sync.Mutex
	list []string
}

type warningsKey struct{}

func withWarnings(ctx context.Context) (context.Context, *warnings) {
	w := &warnings{}
	return context.WithValue(ctx, warningsKey{}, w), w
}

// Warnings are the warnings backends sent during one request.
type Warnings = warnings

// WithWarnings collects the warnings of the backend calls made with the returned context.
func WithWarnings(ctx context.Context) (context.Context, *Warnings) { return withWarnings(ctx) }

// WriteHTTP adds them as kube's Warning headers.
func (w *warnings) WriteHTTP(h http.Header) { w.writeHTTP(h) }

// CollectWarnings is the backend connections' interceptor: it reads warnings from each
// answer's header metadata into the request's collector, if it has one, and the audit
// annotations of the backend's admission into the request's audit event, if it has one.
func CollectWarnings(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	sink, _ := ctx.Value(warningsKey{}).(*warnings)
	rec := audit.From(ctx)
	if sink == nil && rec == nil {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	var md metadata.MD
	err := invoker(ctx, method, req, reply, cc, append(opts, grpc.Header(&md))...)
	collect(ctx, md)
	return err
}

// collect reads the warnings and audit annotations of a backend's header metadata into the
// request's collector and audit event, if it has them.
func collect(ctx context.Context, md metadata.MD) {
	sink, _ := ctx.Value(warningsKey{}).(*warnings)
	rec := audit.From(ctx)
	if ws := md.Get(rpcstatus.WarningMetadataKey); len(ws) > 0 && sink != nil {
		sink.mu.Lock()
		sink.list = append(sink.list, ws...)
		sink.mu.Unlock()
	}
	for _, kv := range md.Get(rpcstatus.AuditAnnotationMetadataKey) {
		if k, v, ok := strings.Cut(kv, "="); ok {
			rec.Annotate(k, v) // a nil record ignores it
		}
	}
}

// writeHTTP adds kube's Warning headers (code 299, agent "-").
func (w *warnings) writeHTTP(h http.Header) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, text := range w.list {
		h.Add("Warning", "299 - "+strconv.Quote(text))
	}
}

// forwardGRPC passes the warnings on to a gRPC client of the gateway.
func (w *warnings) forwardGRPC(ctx context.Context) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.list) > 0 {
		_ = grpc.SetHeader(ctx, metadata.Pairs(pairs(w.list)...))
	}
}

func pairs(list []string) []string {
	out := make([]string, 0, 2*len(list))
	for _, v := range list {
		out = append(out, rpcstatus.WarningMetadataKey, v)
	}
	return out
}
