// Package clusterroleaggregation is kube's clusterrole-aggregation controller: a ClusterRole
// with an aggregationRule gets, as its rules, the rules of every cluster role its selectors
// match, so admin, edit and view pick up what other roles contribute. kube runs it in the
// controller manager; apichain runs it in core, next to the objects.
package clusterroleaggregation

import (
	"context"
	"log/slog"
	"slices"
	"sort"
	"time"

	"github.com/apichain/apichain/pkg/registry"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// Run aggregates after every change to cluster roles, and every resync, until ctx ends.
// Every replica may run it: an aggregation is a pure function of the cluster roles.
func Run(ctx context.Context, client *registry.Client, log *slog.Logger, resync time.Duration) {
	r, ok := client.Lookup(rbacv1.SchemeGroupVersion.WithResource("clusterroles"))
	if !ok {
		return
	}
	registry.Reconcile(ctx, client, r, resync, func(ctx context.Context) error {
		err := aggregate(ctx, client, r)
		if err != nil && ctx.Err() == nil {
			log.Warn("cluster role aggregation", "err", err)
		}
		return err
	})
}

func aggregate(ctx context.Context, client *registry.Client, r *registry.Resource) error {
	objs, err := client.ListShared(ctx, r, "", "") // the cache's: read, and copied into an update
	if err != nil {
		return err
	}
	var roles []*rbacv1.ClusterRole
	for _, o := range objs {
		roles = append(roles, o.(*rbacv1.ClusterRole))
	}
	sort.Slice(roles, func(i, j int) bool { return roles[i].Name < roles[j].Name })
	for _, target := range roles {
		if target.AggregationRule == nil {
			continue
		}
		rules := Rules(target, roles)
		if slices.EqualFunc(rules, target.Rules, sameRule) {
			continue
		}
		if err := client.Update(ctx, r, "", target.Name, "", func(o runtime.Object) {
			role := o.(*rbacv1.ClusterRole)
			role.Rules = make([]rbacv1.PolicyRule, len(rules))
			for i := range rules {
				rules[i].DeepCopyInto(&role.Rules[i]) // their slices are the cached roles'
			}
		}); err != nil {
			return err
		}
	}
	return nil
}

// sameRule is equality.Semantic.DeepEqual for rules (an empty list equals a missing one),
// without reflection: the aggregated roles are recomputed after writes to cluster roles, and
// reflection had made that about 90 ms of CPU in a fresh cluster's start.
func sameRule(a, b rbacv1.PolicyRule) bool {
	return slices.Equal(a.Verbs, b.Verbs) && slices.Equal(a.APIGroups, b.APIGroups) &&
		slices.Equal(a.Resources, b.Resources) && slices.Equal(a.ResourceNames, b.ResourceNames) &&
		slices.Equal(a.NonResourceURLs, b.NonResourceURLs)
}

// Rules are target's aggregated rules: those of the roles (in name order, target excluded)
// that any of its selectors match, each rule once.
func Rules(target *rbacv1.ClusterRole, roles []*rbacv1.ClusterRole) []rbacv1.PolicyRule {
	var selectors []labels.Selector
	for _, sel := range target.AggregationRule.ClusterRoleSelectors {
		if s, err := metav1.LabelSelectorAsSelector(&sel); err == nil {
			selectors = append(selectors, s)
		}
	}
	rules := []rbacv1.PolicyRule{}
	for _, role := range roles {
		if role.Name == target.Name {
			continue
		}
		matched := false
		for _, s := range selectors {
			matched = matched || s.Matches(labels.Set(role.Labels))
		}
		if !matched {
			continue
		}
		for _, rule := range role.Rules {
			if !slices.ContainsFunc(rules, func(have rbacv1.PolicyRule) bool { return sameRule(have, rule) }) {
				rules = append(rules, rule)
			}
		}
	}
	return rules
}
