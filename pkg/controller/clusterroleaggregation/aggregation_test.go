package clusterroleaggregation

import (
	"testing"

	"github.com/stretchr/testify/assert"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func role(name string, labels map[string]string, verbs ...string) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Rules: []rbacv1.PolicyRule{{Verbs: verbs, APIGroups: []string{""}, Resources: []string{"pods"}}}}
}

func TestRules(t *testing.T) {
	toView := map[string]string{"aggregate-to-view": "true"}
	view := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "view", Labels: toView},
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: toView}}}}
	roles := []*rbacv1.ClusterRole{
		role("a-watch", toView, "watch"),
		role("b-get", toView, "get"),
		role("c-duplicate", toView, "get"),
		role("d-unlabelled", nil, "delete"),
		view,
	}
	got := Rules(view, roles)
	assert.Equal(t, []rbacv1.PolicyRule{
		{Verbs: []string{"watch"}, APIGroups: []string{""}, Resources: []string{"pods"}},
		{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}},
	}, got, "matching roles in name order, each rule once, never its own")
	view.AggregationRule.ClusterRoleSelectors = nil
	assert.Empty(t, Rules(view, roles))
}

func TestSameRuleIsSemanticEquality(t *testing.T) {
	rules := []rbacv1.PolicyRule{
		{},
		{Verbs: []string{}},
		{Verbs: []string{"get"}},
		{Verbs: []string{"get"}, APIGroups: []string{""}},
		{Verbs: []string{"get"}, APIGroups: []string{"apps"}},
		{Verbs: []string{"get", "list"}, Resources: []string{"pods"}},
		{Verbs: []string{"list", "get"}, Resources: []string{"pods"}},
		{Verbs: []string{"get"}, Resources: []string{"pods"}, ResourceNames: []string{"a"}},
		{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}},
		{Verbs: []string{"get"}, NonResourceURLs: []string{}},
	}
	for _, a := range rules {
		for _, b := range rules {
			assert.Equal(t, equality.Semantic.DeepEqual(a, b), sameRule(a, b), "%v and %v", a, b)
		}
	}
}
