package storage

import (
	"context"

	"github.com/apichain/apichain/pkg/audit"
	"github.com/apichain/apichain/pkg/spans"
	"go.opentelemetry.io/otel/attribute"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// startSpan starts kube's etcd3 span for an operation on key (kube's names and attributes;
// the etcd client's own call is its child): nothing when the request is not traced.
func (s *Store) startSpan(ctx context.Context, name, key string) (context.Context, oteltrace.Span) {
	if !spans.Recording(ctx) {
		return spans.Start(ctx, name)
	}
	gr := s.groupResource(key)
	return spans.Start(ctx, name, attribute.String("audit-id", audit.IDFrom(ctx)), attribute.String("key", key),
		attribute.String("group", gr.Group), attribute.String("resource", gr.Resource))
}

// endSpan records the call's outcome as kube's events do ("Txn call succeeded", "Get call
// failed") and ends the span.
func endSpan(span oteltrace.Span, call string, err error) {
	if !span.IsRecording() {
		return
	}
	if err != nil {
		span.AddEvent(call+" call failed", oteltrace.WithAttributes(attribute.String("err", err.Error())))
	} else {
		span.AddEvent(call + " call succeeded")
	}
	span.End()
}
