// Package scheduling is the scheduling.k8s.io/v1 group as core serves it: PriorityClasses, with kube's
// system priority classes.
package scheduling

import (
	"github.com/apichain/apichain/pkg/registry"
)

// Resources are the group's resources in kube's order.
func Resources() []*registry.Resource {
	return []*registry.Resource{priorityClasses()}
}
