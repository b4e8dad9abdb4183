// Package topology is apichain's one table of services: which services exist, the order of
// kube-apiserver's delegation chain they form behind the gateway, their default ports, and
// the names the gateway's serving certificate answers to. Everything that lists services or
// walks the chain reads it from here.
package topology

import "slices"

// The services' names, as they appear in lifecycle state, logs, readyz and metrics.
const (
	Gateway    = "gateway"
	Aggregator = "aggregator"
	Core       = "core"
	Extensions = "extensions"
)

// chain is kube-apiserver's delegation chain: the aggregator first, then the built-in API,
// then CRDs, then 404.
var chain = []string{Aggregator, Core, Extensions}

// Chain returns the delegates in the order the gateway asks them.
func Chain() []string { return slices.Clone(chain) }

// Services returns every service: the gateway, then the chain.
func Services() []string { return append([]string{Gateway}, chain...) }

// Rank orders services for display: the gateway, then the chain in order; unknown names last.
func Rank(service string) int {
	if i := slices.Index(Services(), service); i >= 0 {
		return i
	}
	return len(chain) + 1
}

// Default ports.
const (
	// GatewayPort is kube-apiserver's secure port.
	GatewayPort = 6443
	// BackendPort is where every backend serves gRPC.
	BackendPort = 9090
)

// BackendServerName is the name in every backend's certificate, which the gateway and the
// other backends verify whatever address they dial (instances come and go; the name does
// not); a backend presents the same certificate when it reads the kinds another one owns.
const BackendServerName = "apichain-backend"

// GatewayClientName is the common name of the gateway's client certificate; backends accept
// identity metadata only from a peer that presents it.
const GatewayClientName = "system:apichain:gateway"

// servingHosts are kube-apiserver's in-cluster names (its serving certificate carries them so
// pods reach it as https://kubernetes.default.svc) and apichain's own.
var servingHosts = []string{"apichain", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
	"kubernetes.default.svc.cluster.local"}

// ServingHosts returns the names for the gateway's serving certificate: kube's in-cluster
// names, apichain's, and extra ones (--external-hostname). Loopback names are added by pkg/certs.
func ServingHosts(extra ...string) []string {
	return append(slices.Clone(servingHosts), extra...)
}
