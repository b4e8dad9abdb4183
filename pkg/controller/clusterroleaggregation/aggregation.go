// Package clusterroleaggregation is kube's clusterrole-aggregation controller: a ClusterRole
// with an aggregationRule gets, as its rules, the rules of every cluster role its selectors
// match, so admin, edit and view pick up what other roles contribute. kube runs it in the
// controller manager; apichain runs it in core, next to the objects.
package clusterroleaggregation

import (
	"context"
	"log/slog"
	"sort"
	"time"

	"github.com/apichain/apichain/pkg/registry"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
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
	client.Reconcile(ctx, r, resync, func(ctx context.Context) error {
		err := aggregate(ctx, client, r)
		if err != nil && ctx.Err() == nil {
			log.Warn("cluster role aggregation", "err", err)
		}
		return err
	})
}

func aggregate(ctx context.Context, client *registry.Client, r *registry.Resource) error {
	objs, err := client.List(ctx, r, "", "")
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
		if equality.Semantic.DeepEqual(rules, target.Rules) {
			continue
		}
		if err := client.Update(ctx, r, "", target.Name, "", func(o runtime.Object) {
			o.(*rbacv1.ClusterRole).Rules = rules
		}); err != nil {
			return err
		}
	}
	return nil
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
			exists := false
			for _, have := range rules {
				exists = exists || equality.Semantic.DeepEqual(have, rule)
			}
			if !exists {
				rules = append(rules, rule)
			}
		}
	}
	return rules
}
