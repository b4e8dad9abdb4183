// Package dra is the resource.k8s.io/v1 group (dynamic resource allocation) as core serves it:
// DeviceClasses, DeviceTaintRules, ResourceClaims, ResourceClaimTemplates and ResourceSlices.
// apichain stores and validates them; allocation is the scheduler's and the drivers' work.
package dra

import (
	"github.com/apichain/apichain/pkg/registry"
)

// Resources are the group's resources in kube's order.
func Resources() []*registry.Resource {
	return []*registry.Resource{deviceClasses(), deviceTaintRules(), resourceClaims(), resourceClaimTemplates(), resourceSlices()}
}
