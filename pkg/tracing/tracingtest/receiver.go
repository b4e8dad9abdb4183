// Package tracingtest is an OTLP trace receiver for tests: a gRPC server of OpenTelemetry's
// collector TraceService that keeps every span it is sent.
package tracingtest

import (
	"context"
	"encoding/hex"
	"net"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/grpc"
)

// Span is one received span, flattened.
type Span struct {
	TraceID, SpanID, ParentSpanID string
	Name                          string
	// Resource are the attributes of the process that sent it (service.name, ...).
	Resource map[string]string
	// Attributes are the span's own.
	Attributes map[string]string
	// Events are the names of its events, in order.
	Events []string
}

// Receiver keeps the spans it receives.
type Receiver struct {
	coltracepb.UnimplementedTraceServiceServer
	// Addr is where it listens (host:port, plain gRPC as OTLP exporters dial by default).
	Addr  string
	mu    sync.Mutex
	spans []Span
}

// Start serves a receiver on a loopback port until the test ends.
func Start(t testing.TB) *Receiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &Receiver{Addr: ln.Addr().String()}
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, r)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return r
}

// Export keeps the request's spans.
func (r *Receiver) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		res := attrs(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				var events []string
				for _, e := range s.GetEvents() {
					events = append(events, e.GetName())
				}
				r.spans = append(r.spans, Span{TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					ParentSpanID: hex.EncodeToString(s.GetParentSpanId()), Name: s.GetName(), Resource: res, Attributes: attrs(s.GetAttributes()), Events: events})
			}
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// Spans are those received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Trace is the spans of one trace.
func (r *Receiver) Trace(traceID string) []Span {
	var out []Span
	for _, s := range r.Spans() {
		if s.TraceID == traceID {
			out = append(out, s)
		}
	}
	return out
}

func attrs(kvs []*commonpb.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		v := kv.GetValue()
		switch {
		case v.GetStringValue() != "":
			m[kv.GetKey()] = v.GetStringValue()
		default:
			m[kv.GetKey()] = v.String()
		}
	}
	return m
}
