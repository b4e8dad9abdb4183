package authz

import (
	"testing"

	"github.com/apichain/apichain/pkg/rbac"
	"github.com/apichain/apichain/pkg/requestinfo"
	"github.com/apichain/apichain/pkg/user"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func resourceReq(verb, group, resource, sub, ns, name string) *requestinfo.RequestInfo {
	return &requestinfo.RequestInfo{IsResourceRequest: true, Verb: verb, APIGroup: group, Resource: resource,
		Subresource: sub, Namespace: ns, Name: name}
}

// testPolicy binds bob to view configmaps in team.
func testPolicy() *rbac.Policy {
	view := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "view"}, Rules: []rbacv1.PolicyRule{
		{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}}}
	return rbac.NewPolicy([]*rbacv1.ClusterRole{view}, nil, nil, []*rbacv1.RoleBinding{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "bob"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{Kind: "User", Name: "bob"}}}})
}

func TestModes(t *testing.T) {
	rbac := &RBAC{}
	admin := &user.User{Name: "admin", Groups: []string{user.SystemPrivilegedGroup}}
	bob := &user.User{Name: "bob"}
	req := resourceReq("delete", "", "namespaces", "", "", "kube-system")

	a, err := New([]string{ModeRBAC}, rbac)
	require.NoError(t, err)
	ok, reason := a.Authorize(bob, req)
	assert.False(t, ok)
	assert.Contains(t, reason, "not synced", "no policy yet: nothing is allowed")
	ok, _ = a.Authorize(admin, req)
	assert.True(t, ok, "system:masters comes first, whatever the modes")
	rbac.Set(testPolicy())
	ok, reason = a.Authorize(bob, req)
	assert.False(t, ok)
	assert.Empty(t, reason)

	a, err = New([]string{ModeRBAC, ModeAlwaysAllow}, rbac)
	require.NoError(t, err)
	ok, _ = a.Authorize(bob, req)
	assert.True(t, ok, "the next mode may allow what RBAC does not")

	_, err = New([]string{"Node"}, rbac)
	assert.ErrorContains(t, err, `authorization-mode "Node" is not supported`)
	_, err = New([]string{ModeRBAC, ModeRBAC}, rbac)
	assert.ErrorContains(t, err, "more than once")
	_, err = New(nil, rbac)
	assert.Error(t, err)
}

// The backends' group may create TokenReviews and SubjectAccessReviews, whatever the modes,
// and nothing else.
func TestDelegators(t *testing.T) {
	a, err := New([]string{ModeAlwaysDeny}, &RBAC{})
	require.NoError(t, err)
	backend := &user.User{Name: "system:apichain:core", Groups: []string{user.BackendsGroup}}
	ok, _ := a.Authorize(backend, resourceReq("create", "authentication.k8s.io", "tokenreviews", "", "", ""))
	assert.True(t, ok)
	ok, _ = a.Authorize(backend, resourceReq("create", "authorization.k8s.io", "subjectaccessreviews", "", "", ""))
	assert.True(t, ok)
	for _, req := range []*requestinfo.RequestInfo{
		resourceReq("create", "authorization.k8s.io", "localsubjectaccessreviews", "", "", "default"),
		resourceReq("list", "authorization.k8s.io", "subjectaccessreviews", "", "", ""),
		resourceReq("get", "", "secrets", "", "", "default"),
		resourceReq("create", "", "serviceaccounts", "token", "default", "default"),
	} {
		ok, _ := a.Authorize(backend, req)
		assert.False(t, ok, "%+v", req)
	}
	ok, _ = a.Authorize(&user.User{Name: "bob"}, resourceReq("create", "authentication.k8s.io", "tokenreviews", "", "", ""))
	assert.False(t, ok, "only the backends' group")
}
