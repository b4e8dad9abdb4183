package filters

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/apichain/apichain/pkg/requestinfo"
)

// RequestMetrics are kube's apiserver_request_total and apiserver_request_duration_seconds,
// with kube's low-cardinality labels.
type RequestMetrics struct {
	total    *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewRequestMetrics registers the metrics on reg.
func NewRequestMetrics(reg prometheus.Registerer) *RequestMetrics {
	m := &RequestMetrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_request_total", Help: "Requests by verb, group, version, resource, subresource and HTTP code.",
		}, []string{"verb", "group", "version", "resource", "subresource", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "apiserver_request_duration_seconds", Help: "Request latency by verb, group, version and resource.",
			Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"verb", "group", "version", "resource", "subresource"}),
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
			verb, group, ver, res, sub := r.Method, "", "", "nonresource", ""
			if info, ok := requestinfo.From(r.Context()); ok && info.IsResourceRequest {
				verb, group, ver, res, sub = info.Verb, info.APIGroup, info.APIVersion, info.Resource, info.Subresource
			}
			m.total.WithLabelValues(verb, group, ver, res, sub, strconv.Itoa(code)).Inc()
			m.duration.WithLabelValues(verb, group, ver, res, sub).Observe(time.Since(start).Seconds())
		}()
		next.ServeHTTP(rec, r)
		completed = true
	})
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
