// Package metrics holds what every apichain process serves on /metrics: the Go and process
// collectors, and the metrics kube's libraries register with component-base's registry.
package metrics

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/component-base/metrics/legacyregistry"
)

// NewRegistry is a process's registry, with the Go and process collectors.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// KubeLibraries are the metrics kube's libraries (admission, CEL, priority and fairness, ...)
// register with component-base's registry, without the Go and process collectors it registers
// as well: a process's own registry has those.
var KubeLibraries = prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
	families, err := legacyregistry.DefaultGatherer.Gather()
	kept := families[:0]
	for _, f := range families {
		if name := f.GetName(); !strings.HasPrefix(name, "go_") && !strings.HasPrefix(name, "process_") {
			kept = append(kept, f)
		}
	}
	return kept, err
})
