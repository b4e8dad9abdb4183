package startup

import (
	"github.com/prometheus/client_golang/prometheus"
)

// collector exports the cluster's startup timeline as metrics on each scrape:
// apichain_startup_duration_seconds (process start to first ready, per instance) and
// apichain_poststarthook_duration_seconds (a histogram per service and hook).
type collector struct {
	states   States
	startup  *prometheus.Desc
	hookDesc *prometheus.Desc
}

var hookBuckets = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60}

// NewCollector exports the timeline of states as metrics.
func NewCollector(states States) prometheus.Collector {
	return &collector{states: states,
		startup: prometheus.NewDesc("apichain_startup_duration_seconds",
			"Time from process start to the first time readyz passed.", []string{"service", "instance"}, nil),
		hookDesc: prometheus.NewDesc("apichain_poststarthook_duration_seconds",
			"Duration of finished post-start hooks.", []string{"service", "hook"}, nil),
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.startup
	ch <- c.hookDesc
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	t := Build(c.states())
	type key struct{ service, hook string }
	hist := map[key][]float64{}
	for _, it := range t.Instances {
		if it.ReadyMs != nil {
			ch <- prometheus.MustNewConstMetric(c.startup, prometheus.GaugeValue, (*it.ReadyMs-it.StartMs)/1000, it.Service, it.InstanceID)
		}
		for _, h := range it.Hooks {
			if h.DurationMs != nil {
				k := key{it.Service, h.Name}
				hist[k] = append(hist[k], *h.DurationMs/1000)
			}
		}
	}
	for k, values := range hist {
		counts := map[float64]uint64{}
		sum := 0.0
		for _, v := range values {
			sum += v
			for _, b := range hookBuckets {
				if v <= b {
					counts[b]++
				}
			}
		}
		ch <- prometheus.MustNewConstHistogram(c.hookDesc, uint64(len(values)), sum, counts, k.service, k.hook)
	}
}
