// Package spans starts the spans a request's handling adds below its own, as kube's
// component-base/tracing.Start does: each is a child of the span in the context, made by that
// span's provider, so the process needs no tracer of its own and nothing is made when the
// request is not traced.
package spans

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// instrumentation is the instrumentation scope of kube's spans.
const instrumentation = "k8s.io/component-base/tracing"

// Recording says the request in ctx is traced: callers build a span's attributes only then.
func Recording(ctx context.Context) bool { return oteltrace.SpanFromContext(ctx).IsRecording() }

// Start starts the span name below ctx's. When ctx's span is not recording it returns ctx and
// that span, so the caller's events and End cost nothing.
func Start(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, oteltrace.Span) {
	parent := oteltrace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, parent
	}
	return parent.TracerProvider().Tracer(instrumentation).Start(ctx, name, oteltrace.WithAttributes(attrs...))
}

// Event adds an event to ctx's span (nothing when it is not recording).
func Event(ctx context.Context, name string, attrs ...attribute.KeyValue) {
	if span := oteltrace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent(name, oteltrace.WithAttributes(attrs...))
	}
}
