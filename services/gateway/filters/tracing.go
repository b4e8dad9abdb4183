package filters

import (
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	oteltrace "go.opentelemetry.io/otel/trace"
	"k8s.io/component-base/tracing"

	"github.com/apichain/apichain/pkg/audit"
	"github.com/apichain/apichain/pkg/requestinfo"
	"github.com/apichain/apichain/pkg/user"
)

// WithTracing starts a request's span as kube-apiserver's tracing filter does, just inside
// authentication: "KubernetesAPI" renamed after the request ("GET
// /api/v1/namespaces/{:namespace}/configmaps/{:name}", or the method for other paths), with
// http.target and audit-id attributes. A caller's W3C traceparent becomes its parent only for
// system:masters and system:monitoring; anyone else's becomes a link, as on kube, so an
// unprivileged client cannot make the server sample.
func WithTracing(next http.Handler, tp oteltrace.TracerProvider) http.Handler {
	traced := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		span := oteltrace.SpanFromContext(r.Context())
		span.SetAttributes(attribute.String("http.target", r.URL.RequestURI()), attribute.String("audit-id", truncatedAuditID(r)))
		next.ServeHTTP(w, r)
	})
	return otelhttp.NewHandler(traced, "KubernetesAPI",
		otelhttp.WithPropagators(tracing.Propagators()),
		otelhttp.WithTracerProvider(tp),
		otelhttp.WithPublicEndpointFn(notPrivileged),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
			info, ok := requestinfo.From(r.Context())
			if !ok || !info.IsResourceRequest {
				return r.Method
			}
			return r.Method + " " + spanPath(info)
		}))
}

// spanPath is the request's path with its namespace and name left out, kube's span name.
func spanPath(info *requestinfo.RequestInfo) string {
	p := "/" + info.APIPrefix
	if info.APIGroup != "" {
		p += "/" + info.APIGroup
	}
	p += "/" + info.APIVersion
	if info.Namespace != "" {
		p += "/namespaces/{:namespace}"
	}
	p += "/" + info.Resource
	if info.Name != "" {
		p += "/{:name}"
	}
	if info.Subresource != "" {
		p += "/" + info.Subresource
	}
	return p
}

func notPrivileged(r *http.Request) bool {
	u, ok := user.From(r.Context())
	if !ok {
		return true
	}
	for _, g := range u.Groups {
		if g == user.SystemPrivilegedGroup || g == user.MonitoringGroup {
			return false
		}
	}
	return true
}

// truncatedAuditID is the request's audit ID, at most 64 characters, as kube puts it on spans.
func truncatedAuditID(r *http.Request) string {
	id := audit.IDFrom(r.Context())
	if len(id) > 64 {
		id = id[:64]
	}
	return id
}

// withFilterSpan runs a filter in a span of its name, as kube's filter latency tracking does
// ("authentication", "audit", "impersonation", "priorityandfairness", "authorization"); it
// adds nothing when tracing is off (tp nil).
func withFilterSpan(next http.Handler, tp oteltrace.TracerProvider, name string) http.Handler {
	if tp == nil {
		return next
	}
	tracer := tp.Tracer("k8s.op/apiserver/pkg/endpoints/filterlatency")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, span := tracer.Start(r.Context(), name)
		defer span.End()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}
