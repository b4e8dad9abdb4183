package rbac

import (
	"testing"

	"github.com/apichain/apichain/pkg/user"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
)

func rule(verbs, groups, resources []string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, APIGroups: groups, Resources: resources}
}

func TestCovers(t *testing.T) {
	s := func(v ...string) []string { return v }
	cases := []struct {
		name           string
		owner, servant []rbacv1.PolicyRule
		want           bool
	}{
		{"same", []rbacv1.PolicyRule{rule(s("get", "list"), s(""), s("pods"))}, []rbacv1.PolicyRule{rule(s("get"), s(""), s("pods"))}, true},
		{"more verbs", []rbacv1.PolicyRule{rule(s("get"), s(""), s("pods"))}, []rbacv1.PolicyRule{rule(s("get", "delete"), s(""), s("pods"))}, false},
		{"stars", []rbacv1.PolicyRule{rule(s("*"), s("*"), s("*"))}, []rbacv1.PolicyRule{rule(s("escalate"), s("x"), s("y/z"))}, true},
		{"split across owner rules", []rbacv1.PolicyRule{rule(s("get"), s(""), s("pods")), rule(s("list"), s(""), s("pods"))},
			[]rbacv1.PolicyRule{rule(s("get", "list"), s(""), s("pods"))}, true},
		{"*/subresource", []rbacv1.PolicyRule{rule(s("update"), s("apps"), s("*/scale"))}, []rbacv1.PolicyRule{rule(s("update"), s("apps"), s("deployments/scale"))}, true},
		{"names owned cover names", []rbacv1.PolicyRule{{Verbs: s("get"), APIGroups: s(""), Resources: s("secrets"), ResourceNames: s("a", "b")}},
			[]rbacv1.PolicyRule{{Verbs: s("get"), APIGroups: s(""), Resources: s("secrets"), ResourceNames: s("a")}}, true},
		{"names do not cover all", []rbacv1.PolicyRule{{Verbs: s("get"), APIGroups: s(""), Resources: s("secrets"), ResourceNames: s("a")}},
			[]rbacv1.PolicyRule{rule(s("get"), s(""), s("secrets"))}, false},
		{"URL prefix", []rbacv1.PolicyRule{{Verbs: s("get"), NonResourceURLs: s("/metrics*")}}, []rbacv1.PolicyRule{{Verbs: s("get"), NonResourceURLs: s("/metrics/cadvisor")}}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ok, _ := Covers(tc.owner, tc.servant)
			assert.Equal(t, tc.want, ok)
		})
	}
}

// The message is kube's, verbs of one resource compacted into one rule.
func TestConfirmNoEscalation(t *testing.T) {
	p := testPolicy()
	bob := &user.User{Name: "bob", Groups: []string{"system:authenticated"}}
	require.NoError(t, p.ConfirmNoEscalation(bob, "team", []rbacv1.PolicyRule{rule([]string{"get"}, []string{""}, []string{"configmaps"})}))
	err := p.ConfirmNoEscalation(bob, "team", []rbacv1.PolicyRule{
		rule([]string{"get", "list"}, []string{""}, []string{"configmaps", "secrets"}),
		rule([]string{"delete"}, []string{""}, []string{"secrets"}),
	})
	require.Error(t, err)
	assert.Equal(t, `user "bob" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:`+"\n"+
		`{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list" "delete"]}`, err.Error())
	rules, err := p.RoleRules(rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}, "")
	require.NoError(t, err)
	assert.Len(t, rules, 1)
}
