package registry

import (
	"sync"

	compbasemetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// kube's object counts (k8s.io/apiserver's storage metrics), with its names, help and labels,
// kept by the watch cache of each resource a backend serves.
var (
	storageObjects = compbasemetrics.NewGaugeVec(&compbasemetrics.GaugeOpts{
		Name:              "apiserver_storage_objects",
		Help:              "[DEPRECATED, consider using apiserver_resource_objects instead] Number of stored objects at the time of last check split by kind. In case of a fetching error, the value will be -1.",
		StabilityLevel:    compbasemetrics.STABLE,
		DeprecatedVersion: "1.34.0",
	}, []string{"resource"})
	resourceObjects = compbasemetrics.NewGaugeVec(&compbasemetrics.GaugeOpts{
		Name:           "apiserver_resource_objects",
		Help:           "Number of stored objects at the time of last check split by kind. In case of a fetching error, the value will be -1.",
		StabilityLevel: compbasemetrics.ALPHA,
	}, []string{"group", "resource"})
	registerMetrics sync.Once
)

func init() {
	registerMetrics.Do(func() { legacyregistry.MustRegister(storageObjects, resourceObjects) })
}

// countObjects sets r's object counts.
func countObjects(r *Resource, n int) {
	gr := r.GroupResource()
	storageObjects.WithLabelValues(gr.String()).Set(float64(n))
	resourceObjects.WithLabelValues(gr.Group, gr.Resource).Set(float64(n))
}
