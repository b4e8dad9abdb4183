package gateway

import (
	"net/http"
	"strconv"
	"time"

	"github.com/apichain/apichain/pkg/requestinfo"
	"github.com/prometheus/client_golang/prometheus"
)

// requestMetrics are kube's apiserver_request_total and apiserver_request_duration_seconds,
// with kube's low-cardinality labels.
type requestMetrics struct {
	total    *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newRequestMetrics(reg prometheus.Registerer) *requestMetrics {
	m := &requestMetrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_request_total", Help: "Requests by verb, group, version, resource, subresource, scope and HTTP code.",
		}, []string{"verb", "group", "version", "resource", "subresource", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "apiserver_request_duration_seconds", Help: "Request latency by verb, group, version and resource.",
			Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"verb", "group", "version", "resource", "subresource"}),
	}
	reg.MustRegister(m.total, m.duration)
	return m
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

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (m *requestMetrics) instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		verb, group, ver, res, sub := r.Method, "", "", "", ""
		if info, ok := requestinfo.From(r.Context()); ok && info.IsResourceRequest {
			verb, group, ver, res, sub = info.Verb, info.APIGroup, info.APIVersion, info.Resource, info.Subresource
		} else {
			res = "nonresource"
		}
		code := rec.code
		if code == 0 {
			code = http.StatusOK
		}
		m.total.WithLabelValues(verb, group, ver, res, sub, strconv.Itoa(code)).Inc()
		m.duration.WithLabelValues(verb, group, ver, res, sub).Observe(time.Since(start).Seconds())
	})
}
