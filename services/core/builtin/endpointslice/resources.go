// Package endpointslice is the discovery.k8s.io/v1 group as core serves it: EndpointSlices (named for its
// kind, since "discovery" here means API discovery).
package endpointslice

import (
	"github.com/apichain/apichain/pkg/registry"
)

// Resources are the group's resources in kube's order.
func Resources() []*registry.Resource {
	return []*registry.Resource{endpointSlices()}
}
