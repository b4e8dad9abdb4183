package apiservice

import (
	"sync"

	compbasemetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/apichain/apichain/pkg/apiregistration"
)

// kube's APIService availability metrics (kube-aggregator's status controller), with its names,
// help and labels.
var (
	unavailableGauge = compbasemetrics.NewGaugeVec(&compbasemetrics.GaugeOpts{
		Name:           "aggregator_unavailable_apiservice",
		Help:           "Gauge of APIServices which are marked as unavailable broken down by APIService name.",
		StabilityLevel: compbasemetrics.ALPHA,
	}, []string{"name"})
	unavailableCounter = compbasemetrics.NewCounterVec(&compbasemetrics.CounterOpts{
		Name:           "aggregator_unavailable_apiservice_total",
		Help:           "Counter of APIServices which are marked as unavailable broken down by APIService name and reason.",
		StabilityLevel: compbasemetrics.ALPHA,
	}, []string{"name", "reason"})
	registerMetrics sync.Once
	// gauged are the APIServices the gauge has a series for.
	gaugedMu sync.Mutex
	gauged   = map[string]bool{}
)

func init() {
	registerMetrics.Do(func() { legacyregistry.MustRegister(unavailableGauge, unavailableCounter) })
}

func isAvailable(a *apiregistration.APIService) bool {
	c := a.Status.AvailableCondition()
	return c != nil && c.Status == apiregistration.ConditionTrue
}

// countUnavailable counts an APIService that was available and is no longer, by its
// condition's reason, as kube does.
func countUnavailable(wasAvailable bool, a *apiregistration.APIService) {
	if !wasAvailable || isAvailable(a) {
		return
	}
	reason := "UnknownReason"
	if c := a.Status.AvailableCondition(); c != nil {
		reason = c.Reason
	}
	unavailableCounter.WithLabelValues(a.Name, reason).Inc()
}

// gauge sets the availability gauge of the APIServices listed, and forgets those gone.
func gauge(list []*apiregistration.APIService) {
	gaugedMu.Lock()
	defer gaugedMu.Unlock()
	seen := map[string]bool{}
	for _, a := range list {
		seen[a.Name] = true
		v := 1.0
		if isAvailable(a) {
			v = 0
		}
		unavailableGauge.WithLabelValues(a.Name).Set(v)
	}
	for name := range gauged {
		if !seen[name] {
			unavailableGauge.DeleteLabelValues(name)
		}
	}
	gauged = seen
}
