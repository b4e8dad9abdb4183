// Package flowcontrol is the flowcontrol.apiserver.k8s.io/v1 group as core serves it: FlowSchemas and
// PriorityLevelConfigurations (API Priority and Fairness configuration, which every gateway
// replica applies to the requests it serves), with kube's defaults, validation and mandatory
// objects.
package flowcontrol

import (
	"github.com/apichain/apichain/pkg/registry"
)

// Resources are the group's resources in kube's order.
func Resources() []*registry.Resource {
	return []*registry.Resource{flowSchemas(), priorityLevelConfigurations()}
}
