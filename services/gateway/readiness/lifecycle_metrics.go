package readiness

import (
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/apichain/apichain/pkg/lifecycle"
)

var (
	instanceReadyDesc = prometheus.NewDesc("apichain_lifecycle_instance_ready",
		"1 if the instance reports itself ready, 0 if not, for every instance of every service the gateway knows of (from NATS, or from gRPC health while NATS is unreachable).",
		[]string{"service", "instance"}, nil)
	lifecycleSourceDesc = prometheus.NewDesc("apichain_lifecycle_source",
		"1 for where the gateway reads the instances' lifecycle state from: nats, or grpc-health while NATS is unreachable.",
		[]string{"source"}, nil)
	natsConnectedDesc = prometheus.NewDesc("apichain_nats_connected",
		"1 while this process is connected to NATS.", nil, nil)
	natsReconnectsDesc = prometheus.NewDesc("apichain_nats_reconnects_total",
		"Times this process reconnected to NATS (to the same server or another node of its cluster).", nil, nil)
)

// LifecycleCollector exports what the gateway knows of every instance, where it learns it
// from, and its NATS connection (nc may be nil: no NATS).
func LifecycleCollector(reg *lifecycle.Registry, nc *nats.Conn) prometheus.Collector {
	return lifecycleCollector{reg, nc}
}

type lifecycleCollector struct {
	reg *lifecycle.Registry
	nc  *nats.Conn
}

func (lifecycleCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- instanceReadyDesc
	ch <- lifecycleSourceDesc
	ch <- natsConnectedDesc
	ch <- natsReconnectsDesc
}

func (c lifecycleCollector) Collect(ch chan<- prometheus.Metric) {
	for _, st := range c.reg.Instances() {
		ch <- prometheus.MustNewConstMetric(instanceReadyDesc, prometheus.GaugeValue, boolValue(st.GetReady()), st.GetService(), st.GetInstanceId())
	}
	for _, s := range []lifecycle.Source{lifecycle.SourceNATS, lifecycle.SourceGRPC} {
		ch <- prometheus.MustNewConstMetric(lifecycleSourceDesc, prometheus.GaugeValue, boolValue(c.reg.Source() == s), string(s))
	}
	var reconnects uint64
	if c.nc != nil {
		reconnects = c.nc.Stats().Reconnects
	}
	ch <- prometheus.MustNewConstMetric(natsConnectedDesc, prometheus.GaugeValue, boolValue(c.nc != nil && c.nc.IsConnected()))
	ch <- prometheus.MustNewConstMetric(natsReconnectsDesc, prometheus.CounterValue, float64(reconnects))
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
