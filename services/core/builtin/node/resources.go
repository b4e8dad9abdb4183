// Package node is the node.k8s.io/v1 group as core serves it: RuntimeClasses.
package node

import (
	"github.com/apichain/apichain/pkg/registry"
)

// Resources are the group's resources in kube's order.
func Resources() []*registry.Resource {
	return []*registry.Resource{runtimeClasses()}
}
