package registry

import (
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	compbasemetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// kube's storage and watch cache metrics (k8s.io/apiserver's storage/metrics and
// storage/cacher/metrics), with their names, help, buckets and labels, kept by apichain's
// watch caches and list paths. kube 1.37 hides the deprecated apiserver_storage_objects and
// apiserver_cache_list_* by default, so apichain does not export them. apichain's caches
// have no indexes: index is always "".
var (
	resourceObjects = compbasemetrics.NewGaugeVec(&compbasemetrics.GaugeOpts{
		Name:           "apiserver_resource_objects",
		Help:           "Number of stored objects at the time of last check split by kind. In case of a fetching error, the value will be -1.",
		StabilityLevel: compbasemetrics.ALPHA,
	}, []string{"group", "resource"})

	listTotal = compbasemetrics.NewCounterVec(&compbasemetrics.CounterOpts{
		Name:           "apiserver_storage_list_total",
		Help:           "Number of LIST requests served from storage",
		StabilityLevel: compbasemetrics.ALPHA,
	}, []string{"group", "resource", "storage", "index"})
	listFetched = compbasemetrics.NewCounterVec(&compbasemetrics.CounterOpts{
		Name:           "apiserver_storage_list_fetched_objects_total",
		Help:           "Number of objects read from storage in the course of serving a LIST request",
		StabilityLevel: compbasemetrics.ALPHA,
	}, []string{"group", "resource", "storage", "index"})
	listEvaluated = compbasemetrics.NewCounterVec(&compbasemetrics.CounterOpts{
		Name:           "apiserver_storage_list_evaluated_objects_total",
		Help:           "Number of objects tested in the course of serving a LIST request from storage",
		StabilityLevel: compbasemetrics.ALPHA,
	}, []string{"group", "resource", "storage"})
	listReturned = compbasemetrics.NewCounterVec(&compbasemetrics.CounterOpts{
		Name:           "apiserver_storage_list_returned_objects_total",
		Help:           "Number of objects returned for a LIST request from storage",
		StabilityLevel: compbasemetrics.ALPHA,
	}, []string{"group", "resource", "storage"})

	cacheEventsReceived = compbasemetrics.NewCounterVec(&compbasemetrics.CounterOpts{
		Name:           "apiserver_watch_cache_events_received_total",
		Help:           "Counter of events received in watch cache broken by resource type.",
		StabilityLevel: compbasemetrics.ALPHA,
	}, []string{"group", "resource"})
	cacheEventsDispatched = compbasemetrics.NewCounterVec(&compbasemetrics.CounterOpts{
		Name:           "apiserver_watch_cache_events_dispatched_total",
		Help:           "Counter of events dispatched in watch cache broken by resource type.",
		StabilityLevel: compbasemetrics.ALPHA,
	}, []string{"group", "resource"})
	cacheResourceVersion = compbasemetrics.NewGaugeVec(&compbasemetrics.GaugeOpts{
		Name:           "apiserver_watch_cache_resource_version",
		Help:           "Current resource version of watch cache broken by resource type. This is truncated to the 15 least significant digits.",
		StabilityLevel: compbasemetrics.ALPHA,
	}, []string{"group", "resource"})
	cacheCapacityGauge = compbasemetrics.NewGaugeVec(&compbasemetrics.GaugeOpts{
		Name:           "watch_cache_capacity",
		Help:           "Total capacity of watch cache broken by resource type.",
		StabilityLevel: compbasemetrics.ALPHA,
	}, []string{"group", "resource"})
	cacheInitializations = compbasemetrics.NewCounterVec(&compbasemetrics.CounterOpts{
		Name:           "apiserver_watch_cache_initializations_total",
		Help:           "Counter of watch cache initializations broken by resource type.",
		StabilityLevel: compbasemetrics.ALPHA,
	}, []string{"group", "resource"})
	cacheInitializationErrors = compbasemetrics.NewCounterVec(&compbasemetrics.CounterOpts{
		Name:           "apiserver_watch_cache_initialization_errors_total",
		Help:           "Counter of watch cache initialization errors broken by resource type.",
		StabilityLevel: compbasemetrics.ALPHA,
	}, []string{"group", "resource"})
	cacheInitializationDuration = compbasemetrics.NewHistogramVec(&compbasemetrics.HistogramOpts{
		Name:           "apiserver_watch_cache_initialization_duration_seconds",
		Help:           "Histogram of watch cache initialization duration in seconds, broken by resource type.",
		StabilityLevel: compbasemetrics.ALPHA,
		Buckets:        []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 180, 600},
	}, []string{"group", "resource"})
	cacheReadWait = compbasemetrics.NewHistogramVec(&compbasemetrics.HistogramOpts{
		Name:           "apiserver_watch_cache_read_wait_seconds",
		Help:           "Histogram of time spent waiting for a watch cache to become fresh.",
		StabilityLevel: compbasemetrics.ALPHA,
		Buckets:        []float64{0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3},
	}, []string{"group", "resource"})
	cacheConsistentReads = compbasemetrics.NewCounterVec(&compbasemetrics.CounterOpts{
		Name:           "apiserver_watch_cache_consistent_read_total",
		Help:           "Counter for consistent reads from cache.",
		StabilityLevel: compbasemetrics.ALPHA,
	}, []string{"group", "resource", "success", "fallback"})

	registerMetrics sync.Once
)

func init() {
	registerMetrics.Do(func() {
		legacyregistry.MustRegister(resourceObjects, listTotal, listFetched, listEvaluated, listReturned,
			cacheEventsReceived, cacheEventsDispatched, cacheResourceVersion, cacheCapacityGauge,
			cacheInitializations, cacheInitializationErrors, cacheInitializationDuration, cacheReadWait,
			cacheConsistentReads)
	})
}

// countObjects sets r's object count.
func countObjects(r *Resource, n int) {
	gr := r.GroupResource()
	resourceObjects.WithLabelValues(gr.Group, gr.Resource).Set(float64(n))
}

// The storage label of apiserver_storage_list_*: where a list was served from.
const (
	fromEtcd       = "etcd"
	fromWatchCache = "watchcache"
)

// recordList counts a list served from storage: the objects read, tested against the
// selector and returned (kube's RecordStorageListMetrics).
func recordList(gr schema.GroupResource, storage string, fetched, evaluated, returned int) {
	listTotal.WithLabelValues(gr.Group, gr.Resource, storage, "").Inc()
	listFetched.WithLabelValues(gr.Group, gr.Resource, storage, "").Add(float64(fetched))
	listEvaluated.WithLabelValues(gr.Group, gr.Resource, storage).Add(float64(evaluated))
	listReturned.WithLabelValues(gr.Group, gr.Resource, storage).Add(float64(returned))
}

// recordConsistentRead counts a consistent (resourceVersion "") list the cache was asked for:
// whether it was served, and whether etcd served it after the cache could not.
func recordConsistentRead(gr schema.GroupResource, success, fallback bool) {
	cacheConsistentReads.WithLabelValues(gr.Group, gr.Resource, strconv.FormatBool(success), strconv.FormatBool(fallback)).Inc()
}

// cacheMetrics are one watch cache's metrics, bound to its labels once: the event path
// counts every event.
type cacheMetrics struct {
	received, dispatched compbasemetrics.CounterMetric
	resourceVersion      compbasemetrics.GaugeMetric
	readWait             compbasemetrics.ObserverMetric
	gr                   schema.GroupResource
}

func newCacheMetrics(gr schema.GroupResource) *cacheMetrics {
	cacheCapacityGauge.WithLabelValues(gr.Group, gr.Resource).Set(cacheCapacity)
	return &cacheMetrics{
		received:        cacheEventsReceived.WithLabelValues(gr.Group, gr.Resource),
		dispatched:      cacheEventsDispatched.WithLabelValues(gr.Group, gr.Resource),
		resourceVersion: cacheResourceVersion.WithLabelValues(gr.Group, gr.Resource),
		readWait:        cacheReadWait.WithLabelValues(gr.Group, gr.Resource),
		gr:              gr,
	}
}

// initialized records one initialization (list and watch) of the cache, started at start.
func (m *cacheMetrics) initialized(start time.Time, err error) {
	if err != nil {
		cacheInitializationErrors.WithLabelValues(m.gr.Group, m.gr.Resource).Inc()
		return
	}
	cacheInitializations.WithLabelValues(m.gr.Group, m.gr.Resource).Inc()
	cacheInitializationDuration.WithLabelValues(m.gr.Group, m.gr.Resource).Observe(time.Since(start).Seconds())
}

func (m *cacheMetrics) revision(rev int64) {
	m.resourceVersion.Set(float64(rev % 1000000000000000))
}
