package rbac

import (
	"context"
	"errors"
	"slices"

	"github.com/apichain/apichain/pkg/caller"
	"github.com/apichain/apichain/pkg/rbac"
	"github.com/apichain/apichain/pkg/registry"
	"github.com/apichain/apichain/pkg/requestinfo"
	"github.com/apichain/apichain/pkg/user"
	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Escalation is kube's RBAC escalation prevention for role and binding writes: a user may
// write a role only with rules they hold themselves, or bind a role only if they hold its
// rules, unless the authorizer lets them "escalate" roles or "bind" that role. It decides
// with the cluster's RBAC objects, which Policy reads from core's own store.
type Escalation struct {
	Policy func(ctx context.Context) (*rbac.Policy, error)
}

// check lets ctx's user write: u may do authorize (escalate or bind) by the gateway's modes,
// or already holds the rules the write grants in namespace.
func (e *Escalation) check(ctx context.Context, resource string, obj runtime.Object, authorize *requestinfo.RequestInfo, namespace string,
	granted func(*rbac.Policy) ([]rbacv1.PolicyRule, error)) error {
	u, ok := user.From(ctx)
	// No user: core's own controllers. system:masters: kube's EscalationAllowed.
	if !ok || slices.Contains(u.Groups, user.SystemPrivilegedGroup) {
		return nil
	}
	modes := caller.AuthorizationModes(ctx)
	if slices.Contains(modes, "AlwaysAllow") {
		return nil // the gateway's chain allows everything, escalate and bind included
	}
	acc := obj.(metav1.Object)
	gr := rbacv1.Resource(resource)
	p, err := e.Policy(ctx)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if slices.Contains(modes, "RBAC") {
		if ok, _ := p.Authorize(u, authorize); ok {
			return nil
		}
	}
	rules, err := granted(p)
	if err == nil {
		err = p.ConfirmNoEscalation(u, namespace, rules)
	}
	if err != nil {
		return apierrors.NewForbidden(gr, acc.GetName(), err)
	}
	return nil
}

// onlyGCFields reports whether an update changes nothing but owner references and
// finalizers, which the garbage collector may change without escalation checks, as in kube.
func onlyGCFields(obj, old runtime.Object) bool {
	if old == nil {
		return false
	}
	o, c := old.DeepCopyObject(), obj.DeepCopyObject()
	oa, ca := o.(metav1.Object), c.(metav1.Object)
	oa.SetOwnerReferences(ca.GetOwnerReferences())
	oa.SetFinalizers(ca.GetFinalizers())
	oa.SetManagedFields(nil)
	ca.SetManagedFields(nil)
	return apiequality.Semantic.DeepEqual(o, c)
}

func escalate(resource, namespace, name string) *requestinfo.RequestInfo {
	return &requestinfo.RequestInfo{IsResourceRequest: true, Verb: "escalate", APIGroup: rbacv1.GroupName,
		Resource: resource, Namespace: namespace, Name: name}
}

func bind(ref rbacv1.RoleRef, namespace string) *requestinfo.RequestInfo {
	resource := map[string]string{"Role": "roles", "ClusterRole": "clusterroles"}[ref.Kind]
	return &requestinfo.RequestInfo{IsResourceRequest: true, Verb: "bind", APIGroup: ref.APIGroup,
		Resource: resource, Namespace: namespace, Name: ref.Name}
}

func (e *Escalation) role(ctx context.Context, obj, old runtime.Object) error {
	if onlyGCFields(obj, old) {
		return nil
	}
	r := obj.(*rbacv1.Role)
	return e.check(ctx, "roles", obj, escalate("roles", r.Namespace, r.Name), r.Namespace,
		func(*rbac.Policy) ([]rbacv1.PolicyRule, error) { return r.Rules, nil })
}

func (e *Escalation) clusterRole(ctx context.Context, obj, old runtime.Object) error {
	if onlyGCFields(obj, old) {
		return nil
	}
	r := obj.(*rbacv1.ClusterRole)
	return e.check(ctx, "clusterroles", obj, escalate("clusterroles", "", r.Name), "", func(*rbac.Policy) ([]rbacv1.PolicyRule, error) {
		if r.AggregationRule != nil {
			return nil, errors.New("must have cluster-admin privileges to use the aggregationRule")
		}
		return r.Rules, nil
	})
}

func (e *Escalation) roleBinding(ctx context.Context, obj, old runtime.Object) error {
	if onlyGCFields(obj, old) {
		return nil
	}
	b := obj.(*rbacv1.RoleBinding)
	return e.check(ctx, "rolebindings", obj, bind(b.RoleRef, b.Namespace), b.Namespace, func(p *rbac.Policy) ([]rbacv1.PolicyRule, error) {
		return p.RoleRules(b.RoleRef, b.Namespace)
	})
}

func (e *Escalation) clusterRoleBinding(ctx context.Context, obj, old runtime.Object) error {
	if onlyGCFields(obj, old) {
		return nil
	}
	b := obj.(*rbacv1.ClusterRoleBinding)
	return e.check(ctx, "clusterrolebindings", obj, bind(b.RoleRef, ""), "", func(p *rbac.Policy) ([]rbacv1.PolicyRule, error) {
		return p.RoleRules(b.RoleRef, "")
	})
}

// PolicyFrom reads the cluster's RBAC objects through client (the watch cache when it is on)
// as one policy, for each escalation check.
func PolicyFrom(client *registry.Client) func(ctx context.Context) (*rbac.Policy, error) {
	return func(ctx context.Context) (*rbac.Policy, error) {
		var all []runtime.Object
		for _, resource := range []string{"clusterroles", "roles", "clusterrolebindings", "rolebindings"} {
			r, ok := client.Lookup(rbacv1.SchemeGroupVersion.WithResource(resource))
			if !ok {
				return nil, errors.New("RBAC is not served here")
			}
			objs, err := client.List(ctx, r, "", "")
			if err != nil {
				return nil, err
			}
			all = append(all, objs...)
		}
		return rbac.PolicyOf(all), nil
	}
}
