package readiness

import (
	"github.com/apichain/apichain/pkg/lifecycle"
	"github.com/prometheus/client_golang/prometheus"
)

var (
	webhookFailuresDesc = prometheus.NewDesc("apichain_admission_webhook_consecutive_failures",
		"Calls in a row to an admission webhook that failed (could not be made or not understood), per backend instance; "+
			"a webhook is listed only while failing.",
		[]string{"service", "instance", "configuration", "webhook"}, nil)
	webhookPausedDesc = prometheus.NewDesc("apichain_admission_webhook_paused",
		"1 while a failing admission webhook is not called and its failurePolicy answers at once, per backend instance.",
		[]string{"service", "instance", "configuration", "webhook"}, nil)
)

// WebhookCollector exports the failing admission webhooks every backend instance reports in
// its lifecycle state.
func WebhookCollector(reg *lifecycle.Registry) prometheus.Collector { return webhookCollector{reg} }

type webhookCollector struct{ reg *lifecycle.Registry }

func (webhookCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- webhookFailuresDesc
	ch <- webhookPausedDesc
}

func (c webhookCollector) Collect(ch chan<- prometheus.Metric) {
	for _, st := range c.reg.Instances() {
		for _, f := range st.GetFailingWebhooks() {
			labels := []string{st.GetService(), st.GetInstanceId(), f.GetConfiguration(), f.GetName()}
			ch <- prometheus.MustNewConstMetric(webhookFailuresDesc, prometheus.GaugeValue, float64(f.GetFailures()), labels...)
			paused := 0.0
			if f.GetOpen() {
				paused = 1
			}
			ch <- prometheus.MustNewConstMetric(webhookPausedDesc, prometheus.GaugeValue, paused, labels...)
		}
	}
}
