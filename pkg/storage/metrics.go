package storage

import (
	"errors"
	"sync"
	"time"

	compbasemetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// kube's etcd client metrics (k8s.io/apiserver's storage/etcd3/metrics), with kube's names,
// help, buckets and labels: each request's operation and the group and resource of the key's
// objects.
var (
	etcdRequestLatency = compbasemetrics.NewHistogramVec(&compbasemetrics.HistogramOpts{
		Name: "etcd_request_duration_seconds",
		Help: "Etcd request latency in seconds for each operation and object type.",
		Buckets: []float64{0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3,
			4, 5, 6, 8, 10, 15, 20, 30, 45, 60},
		StabilityLevel: compbasemetrics.ALPHA,
	}, []string{"operation", "group", "resource"})
	etcdRequestCounts = compbasemetrics.NewCounterVec(&compbasemetrics.CounterOpts{
		Name:           "etcd_requests_total",
		Help:           "Etcd request counts for each operation and object type.",
		StabilityLevel: compbasemetrics.ALPHA,
	}, []string{"operation", "group", "resource"})
	etcdRequestErrorCounts = compbasemetrics.NewCounterVec(&compbasemetrics.CounterOpts{
		Name:           "etcd_request_errors_total",
		Help:           "Etcd failed request counts for each operation and object type.",
		StabilityLevel: compbasemetrics.ALPHA,
	}, []string{"operation", "group", "resource"})
	registerMetrics sync.Once
)

func init() {
	registerMetrics.Do(func() {
		legacyregistry.MustRegister(etcdRequestLatency, etcdRequestCounts, etcdRequestErrorCounts)
	})
}

// recordRequest observes one etcd request on key (or a prefix of keys) as kube does.
func (s *Store) recordRequest(operation, key string, err error, start time.Time) {
	gr := s.groupResource(key)
	etcdRequestLatency.WithLabelValues(operation, gr.Group, gr.Resource).Observe(time.Since(start).Seconds())
	etcdRequestCounts.WithLabelValues(operation, gr.Group, gr.Resource).Inc()
	if err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrAlreadyExists) && !errors.Is(err, ErrConflict) && !errors.Is(err, ErrNotOwned) {
		etcdRequestErrorCounts.WithLabelValues(operation, gr.Group, gr.Resource).Inc()
	}
}
