package rbac

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func errorStrings(errs field.ErrorList) string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return strings.Join(out, "; ")
}

// The messages are kube's (pkg/apis/rbac/validation), which kubectl prints as they are.
func TestValidatePolicyRules(t *testing.T) {
	cases := []struct {
		name       string
		rule       rbacv1.PolicyRule
		namespaced bool
		want       string
	}{
		{"resource rule", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}, true, ""},
		{"no verbs", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}}, true,
			"rules[0].verbs: Required value: verbs must contain at least one value"},
		{"no groups or resources", rbacv1.PolicyRule{Verbs: []string{"get"}}, false,
			"rules[0].apiGroups: Required value: resource rules must supply at least one api group; rules[0].resources: Required value: resource rules must supply at least one resource"},
		{"names on several resources", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods", "secrets"}, ResourceNames: []string{"x"}}, false,
			"rules[0].resourceNames: Required value: resource names cannot apply to multiple resources"},
		{"non-resource URL in a cluster role", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}, false, ""},
		{"non-resource URL in a role", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}, true,
			`rules[0].nonResourceURLs: Invalid value: ["/healthz"]: namespaced rules cannot apply to non-resource URLs`},
		{"both kinds", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/x"}, Resources: []string{"pods"}}, false,
			`rules[0].nonResourceURLs: Invalid value: ["/x"]: rules cannot apply to both regular resources and non-resource URLs`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got field.ErrorList
			if tc.namespaced {
				got = validateRole(&rbacv1.Role{Rules: []rbacv1.PolicyRule{tc.rule}})
			} else {
				got = validateClusterRole(&rbacv1.ClusterRole{Rules: []rbacv1.PolicyRule{tc.rule}})
			}
			assert.Equal(t, tc.want, errorStrings(got))
		})
	}
}

func TestValidateBindings(t *testing.T) {
	ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}
	user := rbacv1.Subject{Kind: "User", APIGroup: rbacv1.GroupName, Name: "bob"}
	sa := rbacv1.Subject{Kind: "ServiceAccount", Name: "default"}
	cases := []struct {
		name       string
		ref        rbacv1.RoleRef
		subjects   []rbacv1.Subject
		namespaced bool
		want       string
	}{
		{"role binding to a cluster role", ref, []rbacv1.Subject{user, sa}, true, ""},
		{"role binding to a role", rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "system:pod-reader"}, nil, true, ""},
		{"cluster binding to a role", rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "r"}, nil, false,
			`roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"`},
		{"other group", rbacv1.RoleRef{APIGroup: "x", Kind: "ClusterRole", Name: "r"}, nil, true,
			`roleRef.apiGroup: Unsupported value: "x": supported values: "rbac.authorization.k8s.io"`},
		{"no role name", rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole"}, nil, true, "roleRef.name: Required value"},
		{"role name with a slash", rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "a/b"}, nil, true,
			`roleRef.name: Invalid value: "a/b": may not contain '/'`},
		{"service account without namespace in a cluster binding", ref, []rbacv1.Subject{sa}, false,
			"subjects[0].namespace: Required value"},
		{"user without group", ref, []rbacv1.Subject{{Kind: "User", Name: "bob"}}, true,
			`subjects[0].apiGroup: Unsupported value: "": supported values: "rbac.authorization.k8s.io"`},
		{"unknown kind", ref, []rbacv1.Subject{{Kind: "Robot", Name: "r2"}}, true,
			`subjects[0].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"`},
		{"empty group name", ref, []rbacv1.Subject{{Kind: "Group", APIGroup: rbacv1.GroupName}}, true,
			`subjects[0].name: Required value; subjects[0].name: Invalid value: "": group name cannot be empty`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got field.ErrorList
			if tc.namespaced {
				got = validateRoleBinding(&rbacv1.RoleBinding{RoleRef: tc.ref, Subjects: tc.subjects})
			} else {
				got = validateClusterRoleBinding(&rbacv1.ClusterRoleBinding{RoleRef: tc.ref, Subjects: tc.subjects})
			}
			assert.Equal(t, tc.want, errorStrings(got))
		})
	}
	changed := &rbacv1.RoleBinding{RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"}}
	assert.Contains(t, errorStrings(validateRoleBindingUpdate(changed, &rbacv1.RoleBinding{RoleRef: ref})), "cannot change roleRef")
	assert.Empty(t, validateRoleBindingUpdate(&rbacv1.RoleBinding{RoleRef: ref}, &rbacv1.RoleBinding{RoleRef: ref}))
}

func TestBindingCells(t *testing.T) {
	b := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "alice"}, {Kind: "User", Name: "bob"}, {Kind: "Group", Name: "devs"},
			{Kind: "ServiceAccount", Namespace: "kube-system", Name: "default"}}}
	cells := clusterRoleBindingCells(b)
	assert.Equal(t, "ClusterRole/view", cells[0])
	assert.Equal(t, []any{"alice, bob", "devs", "kube-system/default"}, cells[2:])
	assert.Empty(t, rbacName("system:controller:x", false), "colons are allowed in role names")
}
