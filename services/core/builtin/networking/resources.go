// Package networking is the networking.k8s.io/v1 group as core serves it: IngressClasses, Ingresses,
// NetworkPolicies, IPAddresses and ServiceCIDRs.
package networking

import (
	"github.com/apichain/apichain/pkg/registry"
)

// Resources are the group's resources in kube's order.
func Resources() []*registry.Resource {
	return []*registry.Resource{ingressClasses(), ingresses(), networkPolicies(), ipAddresses(), serviceCIDRs()}
}
