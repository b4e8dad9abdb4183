// Package rbac is the rbac.authorization.k8s.io/v1 group as core serves it: roles and
// bindings, with kube's validation and its escalation checks on writes.
package rbac

import (
	"github.com/apichain/apichain/pkg/registry"
	rbacv1 "k8s.io/api/rbac/v1"
)

// Resources are the group's resources in kube's order; esc guards role and binding writes.
func Resources(esc *Escalation) []*registry.Resource {
	gv := rbacv1.SchemeGroupVersion
	return []*registry.Resource{
		{GroupVersion: gv, Name: "clusterrolebindings", SingularName: "clusterrolebinding", Kind: "ClusterRoleBinding",
			ValidateName: rbacName, New: registry.Of[rbacv1.ClusterRoleBinding](), NewList: registry.Of[rbacv1.ClusterRoleBindingList](),
			Validate: validateClusterRoleBinding, ValidateUpdate: validateClusterRoleBindingUpdate,
			AuthorizeWrite: esc.clusterRoleBinding, Columns: bindingColumns, Cells: clusterRoleBindingCells},
		{GroupVersion: gv, Name: "clusterroles", SingularName: "clusterrole", Kind: "ClusterRole",
			ValidateName: rbacName, New: registry.Of[rbacv1.ClusterRole](), NewList: registry.Of[rbacv1.ClusterRoleList](),
			Validate: validateClusterRole, AuthorizeWrite: esc.clusterRole, Columns: registry.CreatedAtColumns, Cells: registry.CreatedAtCells},
		{GroupVersion: gv, Name: "rolebindings", SingularName: "rolebinding", Kind: "RoleBinding", Namespaced: true,
			ValidateName: rbacName, New: registry.Of[rbacv1.RoleBinding](), NewList: registry.Of[rbacv1.RoleBindingList](),
			Validate: validateRoleBinding, ValidateUpdate: validateRoleBindingUpdate,
			AuthorizeWrite: esc.roleBinding, Columns: bindingColumns, Cells: roleBindingCells},
		{GroupVersion: gv, Name: "roles", SingularName: "role", Kind: "Role", Namespaced: true,
			ValidateName: rbacName, New: registry.Of[rbacv1.Role](), NewList: registry.Of[rbacv1.RoleList](),
			Validate: validateRole, AuthorizeWrite: esc.role, Columns: registry.CreatedAtColumns, Cells: registry.CreatedAtCells},
	}
}
