package coordination

import (
	"github.com/apichain/apichain/pkg/registry"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

var leaseColumns = []metav1.TableColumnDefinition{registry.Column("Holder", "string", coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"]), registry.AgeColumn}

func leaseCells(o runtime.Object) []any {
	l := o.(*coordinationv1.Lease)
	holder := ""
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	return []any{holder, registry.AgeCell(o)}
}
