package bootstrap

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	"github.com/apichain/apichain/pkg/rbac"
	"github.com/apichain/apichain/pkg/registry"
	"golang.org/x/sync/errgroup"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Ensure creates the default objects that are missing and reconciles the ones that exist and
// still allow it (autoupdate not "false"), as kube's reconciliation does: missing labels,
// annotations, rules, aggregation selectors and subjects are added, nothing is taken away,
// and a binding whose role changed is recreated. The cluster-scoped objects go first, at
// once; the namespaced ones once namespaces (the system namespaces they live in) returns.
func Ensure(ctx context.Context, client *registry.Client, namespaces func(context.Context) error) error {
	kinds := []struct {
		resource   string
		defaults   []runtime.Object
		merge      func(cur, def runtime.Object) (changed, recreate bool)
		namespaced bool
	}{
		{"clusterroles", objects(clusterRoles), mergeClusterRole, false},
		{"clusterrolebindings", objects(clusterRoleBindings), mergeClusterRoleBinding, false},
		{"roles", objects(roles), mergeRole, true},
		{"rolebindings", objects(roleBindings), mergeRoleBinding, true},
	}
	var nsOnce sync.Once
	var nsErr error
	g, gctx := errgroup.WithContext(ctx)
	for _, k := range kinds {
		g.Go(func() error {
			if k.namespaced {
				if nsOnce.Do(func() { nsErr = namespaces(gctx) }); nsErr != nil {
					return nsErr
				}
			}
			return ensureAll(gctx, client, k.resource, k.defaults, k.merge)
		})
	}
	return g.Wait()
}

// ensureAll ensures one resource's defaults, writing them together: etcd batches them, and a
// fresh cluster has some 140 to make.
func ensureAll(ctx context.Context, client *registry.Client, resource string, defaults []runtime.Object,
	merge func(cur, def runtime.Object) (bool, bool)) error {
	r, ok := client.Lookup(rbacv1.SchemeGroupVersion.WithResource(resource))
	if !ok {
		return fmt.Errorf("%s are not served here", resource)
	}
	current, err := client.List(ctx, r, "", "")
	if err != nil {
		return err
	}
	existing := map[string]runtime.Object{}
	for _, o := range current {
		existing[key(o)] = o
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for _, def := range defaults {
		g.Go(func() error {
			if err := ensure(gctx, client, r, existing[key(def)], def, merge); err != nil {
				return fmt.Errorf("%s %s: %w", resource, key(def), err)
			}
			return nil
		})
	}
	return g.Wait()
}

func ensure(ctx context.Context, client *registry.Client, r *registry.Resource, cur, def runtime.Object,
	merge func(cur, def runtime.Object) (bool, bool)) error {
	acc := def.(metav1.Object)
	create := func() error {
		err := client.Create(ctx, r, acc.GetNamespace(), def.DeepCopyObject())
		if apierrors.IsAlreadyExists(err) {
			return nil // another core replica was first
		}
		return err
	}
	if cur == nil {
		return create()
	}
	if cur.(metav1.Object).GetAnnotations()[autoUpdate] == "false" {
		return nil
	}
	if changed, recreate := merge(cur.DeepCopyObject(), def); recreate {
		if _, err := client.Delete(ctx, r, acc.GetNamespace(), acc.GetName(), nil); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		return create()
	} else if !changed {
		return nil
	}
	return client.Update(ctx, r, acc.GetNamespace(), acc.GetName(), "", func(o runtime.Object) { merge(o, def) })
}

func objects[T runtime.Object](list []T) []runtime.Object {
	out := make([]runtime.Object, len(list))
	for i, o := range list {
		out[i] = o
	}
	return out
}

func key(o runtime.Object) string {
	acc := o.(metav1.Object)
	return acc.GetNamespace() + "/" + acc.GetName()
}

// mergeMeta adds the default's labels and annotations that cur lacks.
func mergeMeta(cur, def metav1.Object) bool {
	changed := false
	add := func(get func() map[string]string, set func(map[string]string), want map[string]string) {
		m := get()
		for k, v := range want {
			if _, ok := m[k]; !ok {
				if m == nil {
					m = map[string]string{}
				}
				m[k], changed = v, true
			}
		}
		set(m)
	}
	add(cur.GetLabels, cur.SetLabels, def.GetLabels())
	add(cur.GetAnnotations, cur.SetAnnotations, def.GetAnnotations())
	return changed
}

// mergeRules appends the default rules cur's do not cover.
func mergeRules(cur *[]rbacv1.PolicyRule, def []rbacv1.PolicyRule) bool {
	if ok, missing := rbac.Covers(*cur, def); !ok {
		*cur = append(*cur, missing...)
		return true
	}
	return false
}

// mergeSubjects appends the default subjects cur lacks.
func mergeSubjects(cur *[]rbacv1.Subject, def []rbacv1.Subject) bool {
	changed := false
	for _, s := range def {
		found := false
		for _, c := range *cur {
			found = found || reflect.DeepEqual(c, s)
		}
		if !found {
			*cur, changed = append(*cur, s), true
		}
	}
	return changed
}

func mergeClusterRole(cur, def runtime.Object) (bool, bool) {
	c, d := cur.(*rbacv1.ClusterRole), def.(*rbacv1.ClusterRole)
	changed := mergeMeta(c, d)
	changed = mergeRules(&c.Rules, d.Rules) || changed
	if d.AggregationRule != nil {
		if c.AggregationRule == nil {
			c.AggregationRule, changed = &rbacv1.AggregationRule{}, true
		}
		for _, sel := range d.AggregationRule.ClusterRoleSelectors {
			found := false
			for _, have := range c.AggregationRule.ClusterRoleSelectors {
				found = found || reflect.DeepEqual(have, sel)
			}
			if !found {
				c.AggregationRule.ClusterRoleSelectors, changed = append(c.AggregationRule.ClusterRoleSelectors, sel), true
			}
		}
	}
	return changed, false
}

func mergeRole(cur, def runtime.Object) (bool, bool) {
	c, d := cur.(*rbacv1.Role), def.(*rbacv1.Role)
	changed := mergeMeta(c, d)
	return mergeRules(&c.Rules, d.Rules) || changed, false
}

func mergeClusterRoleBinding(cur, def runtime.Object) (bool, bool) {
	c, d := cur.(*rbacv1.ClusterRoleBinding), def.(*rbacv1.ClusterRoleBinding)
	if c.RoleRef != d.RoleRef {
		return true, true
	}
	changed := mergeMeta(c, d)
	return mergeSubjects(&c.Subjects, d.Subjects) || changed, false
}

func mergeRoleBinding(cur, def runtime.Object) (bool, bool) {
	c, d := cur.(*rbacv1.RoleBinding), def.(*rbacv1.RoleBinding)
	if c.RoleRef != d.RoleRef {
		return true, true
	}
	changed := mergeMeta(c, d)
	return mergeSubjects(&c.Subjects, d.Subjects) || changed, false
}
