// Package coordination is the coordination.k8s.io/v1 group as core serves it: Leases.
package coordination

import (
	"github.com/apichain/apichain/pkg/registry"
	coordinationv1 "k8s.io/api/coordination/v1"
)

// Resources are the group's resources.
func Resources() []*registry.Resource {
	return []*registry.Resource{{GroupVersion: coordinationv1.SchemeGroupVersion, Name: "leases", SingularName: "lease", Kind: "Lease",
		Namespaced: true, HasSpec: true, NoGeneration: true, New: registry.Of[coordinationv1.Lease](), NewList: registry.Of[coordinationv1.LeaseList](),
		Columns: leaseColumns, Cells: leaseCells}}
}
