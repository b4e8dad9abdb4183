package bootstrap

import (
	"testing"

	"github.com/stretchr/testify/assert"
	rbacv1 "k8s.io/api/rbac/v1"
)

// Reconciling adds what the defaults have and the object lacks, and keeps what users added.
func TestMerge(t *testing.T) {
	def := clusterRole("system:basic-user", nil, rule(s("create"), s("authorization.k8s.io"), "selfsubjectaccessreviews"))
	cur := def.DeepCopy()
	cur.Labels = map[string]string{"team": "x"}
	cur.Rules = []rbacv1.PolicyRule{{Verbs: s("get"), APIGroups: s(""), Resources: s("pods")}}
	changed, recreate := mergeClusterRole(cur, def)
	assert.True(t, changed)
	assert.False(t, recreate)
	assert.Equal(t, map[string]string{"team": "x", bootstrapLabel: bootstrapLabelValue}, cur.Labels)
	assert.Len(t, cur.Rules, 2, "the user's rule, then the default one")
	changed, _ = mergeClusterRole(cur, def)
	assert.False(t, changed, "idempotent")

	b := clusterRoleBinding("cluster-admin", "cluster-admin", group("system:masters"))
	cb := b.DeepCopy()
	cb.Subjects = append(cb.Subjects, user("alice"))
	changed, recreate = mergeClusterRoleBinding(cb, b)
	assert.False(t, changed || recreate, "extra subjects stay")
	cb.RoleRef.Name = "view"
	_, recreate = mergeClusterRoleBinding(cb, b)
	assert.True(t, recreate, "a binding to another role is recreated")
}

// The data is kube's: the roles users rely on are there, and the bindings reference them.
func TestPolicyIsConsistent(t *testing.T) {
	names := map[string]bool{}
	for _, r := range clusterRoles {
		names[r.Name] = true
	}
	for _, want := range []string{"cluster-admin", "admin", "edit", "view", "system:discovery", "system:basic-user",
		"system:public-info-viewer", "system:service-account-issuer-discovery"} {
		assert.True(t, names[want], want)
	}
	for _, b := range clusterRoleBindings {
		assert.True(t, names[b.RoleRef.Name], "%s binds a missing role %s", b.Name, b.RoleRef.Name)
	}
	assert.Len(t, clusterRoles, 73)
	assert.Len(t, clusterRoleBindings, 54)
}
