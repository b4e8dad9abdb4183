package proxy

import (
	"sync"

	compbasemetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// kube's watch metrics (k8s.io/apiserver's endpoints metrics), with its names, help, buckets
// and labels: the events the gateway sends its watch clients.
var (
	watchEvents = compbasemetrics.NewCounterVec(&compbasemetrics.CounterOpts{
		Subsystem:      "apiserver",
		Name:           "watch_events_total",
		Help:           "Number of events sent in watch clients",
		StabilityLevel: compbasemetrics.ALPHA,
	}, []string{"group", "version", "resource"})
	watchEventsSizes = compbasemetrics.NewHistogramVec(&compbasemetrics.HistogramOpts{
		Subsystem:      "apiserver",
		Name:           "watch_events_sizes",
		Help:           "Watch event size distribution in bytes",
		Buckets:        compbasemetrics.ExponentialBuckets(1024, 2.0, 8), // 1K, 2K, 4K, 8K, ..., 128K.
		StabilityLevel: compbasemetrics.ALPHA,
	}, []string{"group", "version", "resource"})
	registerMetrics sync.Once
)

func init() {
	registerMetrics.Do(func() { legacyregistry.MustRegister(watchEvents, watchEventsSizes) })
}
