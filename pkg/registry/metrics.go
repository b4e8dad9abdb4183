package registry

import (
	"sync"

	compbasemetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// kube's object count (k8s.io/apiserver's storage metrics), with its name, help and labels,
// kept by the watch cache of each resource a backend serves. kube 1.37 hides the deprecated
// apiserver_storage_objects by default, so apichain does not export it.
var (
	resourceObjects = compbasemetrics.NewGaugeVec(&compbasemetrics.GaugeOpts{
		Name:           "apiserver_resource_objects",
		Help:           "Number of stored objects at the time of last check split by kind. In case of a fetching error, the value will be -1.",
		StabilityLevel: compbasemetrics.ALPHA,
	}, []string{"group", "resource"})
	registerMetrics sync.Once
)

func init() {
	registerMetrics.Do(func() { legacyregistry.MustRegister(resourceObjects) })
}

// countObjects sets r's object count.
func countObjects(r *Resource, n int) {
	gr := r.GroupResource()
	resourceObjects.WithLabelValues(gr.Group, gr.Resource).Set(float64(n))
}
