package rbac

import (
	"github.com/apichain/apichain/services/core/builtin/defaulting"
	rbacv1 "k8s.io/api/rbac/v1"
)

// kube 1.37's defaulting functions for the rbac.authorization.k8s.io/v1 types (its SetDefaults_* in
// k8s.io/kubernetes/pkg/apis/rbac/v1/defaults.go), with the feature gates at their 1.37 defaults;
// declarative `+default=` markers are applied by the defaulting walker.
func init() {
	defaulting.Register(func(b *rbacv1.ClusterRoleBinding) { defaulting.String(&b.RoleRef.APIGroup, rbacv1.GroupName) })
	defaulting.Register(func(b *rbacv1.RoleBinding) { defaulting.String(&b.RoleRef.APIGroup, rbacv1.GroupName) })
	defaulting.Register(func(s *rbacv1.Subject) {
		if s.APIGroup == "" && (s.Kind == rbacv1.UserKind || s.Kind == rbacv1.GroupKind) {
			s.APIGroup = rbacv1.GroupName
		}
	})
}
