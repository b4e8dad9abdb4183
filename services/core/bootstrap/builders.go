// Package bootstrap is kube's bootstrap RBAC policy: the default cluster roles, bindings and
// system-namespace roles a kube-apiserver creates at start (rbac/bootstrap-roles), and their
// reconciliation on every start.
package bootstrap

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Every default object carries these, as kube's do.
const (
	bootstrapLabel      = "kubernetes.io/bootstrapping"
	bootstrapLabelValue = "rbac-defaults"
	autoUpdate          = rbacv1.AutoUpdateAnnotationKey
)

func objectMeta(namespace, name string, extraLabels map[string]string) metav1.ObjectMeta {
	labels := map[string]string{bootstrapLabel: bootstrapLabelValue}
	for k, v := range extraLabels {
		labels[k] = v
	}
	return metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels,
		Annotations: map[string]string{autoUpdate: "true"}}
}

func s(v ...string) []string { return v }

func labels(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

type policyRule rbacv1.PolicyRule

func rule(verbs, groups []string, resources ...string) policyRule {
	return policyRule{Verbs: verbs, APIGroups: groups, Resources: resources}
}

func (r policyRule) named(names ...string) policyRule {
	r.ResourceNames = names
	return r
}

func urls(verbs []string, urls ...string) policyRule {
	return policyRule{Verbs: verbs, NonResourceURLs: urls}
}

func rules(rs []policyRule) []rbacv1.PolicyRule {
	out := make([]rbacv1.PolicyRule, len(rs))
	for i, r := range rs {
		out[i] = rbacv1.PolicyRule(r)
	}
	return out
}

func clusterRole(name string, extraLabels map[string]string, rs ...policyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: objectMeta("", name, extraLabels), Rules: rules(rs)}
}

// aggregating gives a cluster role kube's aggregation rule: the rules of every cluster role
// labelled label=true, which core's aggregation controller collects.
func aggregating(c *rbacv1.ClusterRole, label string) *rbacv1.ClusterRole {
	c.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{label: "true"}}}}
	return c
}

func role(namespace, name string, rs ...policyRule) *rbacv1.Role {
	return &rbacv1.Role{ObjectMeta: objectMeta(namespace, name, nil), Rules: rules(rs)}
}

func user(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
}

func group(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: name}
}

func serviceAccount(namespace, name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}
}

func clusterRoleBinding(name, role string, subjects ...rbacv1.Subject) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{ObjectMeta: objectMeta("", name, nil),
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}, Subjects: subjects}
}

func roleBinding(namespace, name, role string, subjects ...rbacv1.Subject) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{ObjectMeta: objectMeta(namespace, name, nil),
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role}, Subjects: subjects}
}
