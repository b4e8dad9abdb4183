package filters

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/apichain/apichain/pkg/requestinfo"
)

// RequestMetrics are kube's apiserver_request_total and apiserver_request_duration_seconds,
// with kube's help, buckets and labels (verb as kube reports it, dry_run, group, version,
// resource, subresource, scope, component).
type RequestMetrics struct {
	total    *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewRequestMetrics registers the metrics on reg.
func NewRequestMetrics(reg prometheus.Registerer) *RequestMetrics {
	m := &RequestMetrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_request_total",
			Help: "[STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.",
		}, []string{"verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "apiserver_request_duration_seconds",
			Help: "[STABLE] Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.",
			Buckets: []float64{0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3,
				4, 5, 6, 8, 10, 15, 20, 30, 45, 60},
		}, []string{"verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component"}),
	}
	reg.MustRegister(m.total, m.duration)
	return m
}

// WithRequestMetrics counts every request with the code it got, including those a later
// filter rejected (401, 403, 429, 503, the timeout's 504) and those that panicked (500, as
// the panic recovery outside answers). It sits right inside request info, which labels it.
func WithRequestMetrics(next http.Handler, m *RequestMetrics) http.Handler {
	if m == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		completed := false
		defer func() {
			code := rec.code
			switch {
			case !completed:
				code = http.StatusInternalServerError
			case code == 0:
				code = http.StatusOK
			}
			info, _ := requestinfo.From(r.Context())
			if info == nil {
				info = &requestinfo.RequestInfo{}
			}
			verb, dryRun, scope := metricVerb(r, info), metricDryRun(r), metricScope(info)
			m.total.WithLabelValues(verb, dryRun, info.APIGroup, info.APIVersion, info.Resource, info.Subresource, scope, "apiserver", strconv.Itoa(code)).Inc()
			m.duration.WithLabelValues(verb, dryRun, info.APIGroup, info.APIVersion, info.Resource, info.Subresource, scope, "apiserver").Observe(time.Since(start).Seconds())
		}()
		next.ServeHTTP(rec, r)
		completed = true
	})
}

// metricVerbs are kube's words for the request verbs in its metrics.
var metricVerbs = map[string]string{"get": "GET", "list": "LIST", "watch": "WATCH", "create": "POST", "update": "PUT",
	"patch": "PATCH", "delete": "DELETE", "deletecollection": "DELETECOLLECTION"}

// metricVerb is the verb kube's request metrics report: GET, LIST, WATCH, POST, PUT, PATCH,
// APPLY, DELETE, DELETECOLLECTION, CONNECT for the connect subresources; the HTTP method for
// other paths, "other" for a method kube does not know.
func metricVerb(r *http.Request, info *requestinfo.RequestInfo) string {
	if !info.IsResourceRequest {
		switch m := strings.ToUpper(r.Method); m {
		case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
			return m
		default:
			return "other"
		}
	}
	switch info.Subresource {
	case "log", "exec", "portforward", "attach", "proxy":
		return "CONNECT"
	}
	if info.Verb == "patch" && r.Header.Get("Content-Type") == "application/apply-patch+yaml" {
		return "APPLY"
	}
	if v, ok := metricVerbs[info.Verb]; ok {
		return v
	}
	return "other"
}

// metricDryRun is the request's dryRun values, sorted and without repeats ("invalid" if one
// is not All), as kube labels it.
func metricDryRun(r *http.Request) string {
	if !strings.Contains(r.URL.RawQuery, "dryRun") {
		return ""
	}
	values := slices.Clone(r.URL.Query()["dryRun"])
	for _, v := range values {
		if v != metav1.DryRunAll {
			return "invalid"
		}
	}
	slices.Sort(values)
	return strings.Join(slices.Compact(values), ",")
}

// metricScope is kube's scope label: resource (one object, or a create), namespace, cluster,
// or "" for other paths.
func metricScope(info *requestinfo.RequestInfo) string {
	switch {
	case info.Name != "" || info.Verb == "create":
		return "resource"
	case info.Namespace != "":
		return "namespace"
	case info.IsResourceRequest:
		return "cluster"
	}
	return ""
}

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(p []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	return s.ResponseWriter.Write(p)
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
