// Package discovery holds what the gateway and the backends share about kube discovery.
package discovery

import "strings"

// AggregatedDiscoveryContentType is the media type of aggregated discovery (apidiscovery.k8s.io/v2).
const AggregatedDiscoveryContentType = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

// WantsAggregatedDiscovery reports whether an Accept header asks for aggregated discovery v2 before
// anything else it accepts, as kubectl and client-go do.
func WantsAggregatedDiscovery(accept string) bool {
	for _, clause := range strings.Split(accept, ",") {
		c := strings.ReplaceAll(strings.TrimSpace(clause), " ", "")
		if strings.Contains(c, "as=APIGroupDiscoveryList") && strings.Contains(c, "g=apidiscovery.k8s.io") && strings.Contains(c, "v=v2") && !strings.Contains(c, "v=v2beta1") {
			return true
		}
		if strings.HasPrefix(c, "application/json") || strings.HasPrefix(c, "*/*") {
			return false
		}
	}
	return false
}

// GroupVersion is kube's "group/version", or just "version" for the legacy group: the key
// by which the gateway routes and backends announce what they serve.
func GroupVersion(group, version string) string {
	if group == "" {
		return version
	}
	return group + "/" + version
}

// GroupOrderQuery is the query of the /apis document request that asks the aggregator for the
// order of the groups in /apis (a JSON list of names), which its APIServices' priorities
// decide.
const GroupOrderQuery = "apichain-group-order"
