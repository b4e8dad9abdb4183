// Package rbac is kube's RBAC evaluation: rules, roles and bindings indexed for the question
// "may this user do this", the rules that apply to a user, and whether one set of rules
// covers another (escalation prevention). The gateway authorizes with it; core uses it to
// refuse role and binding writes that would grant more than the writer holds.
package rbac

import (
	"fmt"
	"strings"

	"github.com/apichain/apichain/pkg/requestinfo"
	"github.com/apichain/apichain/pkg/user"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// Policy is one consistent view of the cluster's RBAC objects, indexed for what a request
// asks: which bindings name this user or one of its groups, cluster-wide and in the
// request's namespace. Build one with NewPolicy; it is never modified afterwards.
type Policy struct {
	clusterRoles map[string]*rbacv1.ClusterRole
	roles        map[string]*rbacv1.Role // "namespace/name"
	cluster      bindingIndex
	namespaces   map[string]bindingIndex
}

// grant is one subject of one binding: what the binding gives, and to whom, for the reason
// kube's authorizer names ("RBAC: allowed by ClusterRoleBinding ...").
type grant struct {
	kind      string // "ClusterRoleBinding" or "RoleBinding"
	name      string
	namespace string // the binding's ("" for cluster bindings)
	roleRef   rbacv1.RoleRef
	subject   rbacv1.Subject
}

type bindingIndex struct {
	byUser  map[string][]*grant // user names, and service accounts' user names
	byGroup map[string][]*grant
}

func (ix *bindingIndex) add(g *grant, bindingNamespace string) {
	s := g.subject
	switch s.Kind {
	case rbacv1.UserKind:
		ix.byUser[s.Name] = append(ix.byUser[s.Name], g)
	case rbacv1.GroupKind:
		ix.byGroup[s.Name] = append(ix.byGroup[s.Name], g)
	case rbacv1.ServiceAccountKind:
		// A role binding's service account defaults to the binding's namespace.
		ns := s.Namespace
		if ns == "" {
			ns = bindingNamespace
		}
		if ns != "" {
			name := ServiceAccountUsername(ns, s.Name)
			ix.byUser[name] = append(ix.byUser[name], g)
		}
	}
}

func newIndex() bindingIndex {
	return bindingIndex{byUser: map[string][]*grant{}, byGroup: map[string][]*grant{}}
}

// ServiceAccountUsername is the user a service account's token authenticates as.
func ServiceAccountUsername(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// NewPolicy indexes the RBAC objects.
func NewPolicy(clusterRoles []*rbacv1.ClusterRole, roles []*rbacv1.Role, clusterBindings []*rbacv1.ClusterRoleBinding, bindings []*rbacv1.RoleBinding) *Policy {
	p := &Policy{clusterRoles: map[string]*rbacv1.ClusterRole{}, roles: map[string]*rbacv1.Role{},
		cluster: newIndex(), namespaces: map[string]bindingIndex{}}
	for _, r := range clusterRoles {
		p.clusterRoles[r.Name] = r
	}
	for _, r := range roles {
		p.roles[r.Namespace+"/"+r.Name] = r
	}
	for _, b := range clusterBindings {
		for _, s := range b.Subjects {
			p.cluster.add(&grant{kind: "ClusterRoleBinding", name: b.Name, roleRef: b.RoleRef, subject: s}, "")
		}
	}
	for _, b := range bindings {
		ix, ok := p.namespaces[b.Namespace]
		if !ok {
			ix = newIndex()
			p.namespaces[b.Namespace] = ix
		}
		for _, s := range b.Subjects {
			ix.add(&grant{kind: "RoleBinding", name: b.Name, namespace: b.Namespace, roleRef: b.RoleRef, subject: s}, b.Namespace)
		}
	}
	return p
}

// rules resolves a grant's role, as kube's rule resolver does.
func (p *Policy) rules(g *grant) ([]rbacv1.PolicyRule, error) {
	switch g.roleRef.Kind {
	case "Role":
		if r, ok := p.roles[g.namespace+"/"+g.roleRef.Name]; ok {
			return r.Rules, nil
		}
		return nil, apierrors.NewNotFound(rbacv1.Resource("role"), g.roleRef.Name)
	case "ClusterRole":
		if r, ok := p.clusterRoles[g.roleRef.Name]; ok {
			return r.Rules, nil
		}
		return nil, apierrors.NewNotFound(rbacv1.Resource("clusterrole"), g.roleRef.Name)
	}
	return nil, fmt.Errorf("unsupported role reference kind: %q", g.roleRef.Kind)
}

// visit calls f with each grant that applies to u in namespace ("" for cluster scope only),
// cluster bindings first, until f returns false. A binding is visited once even when
// several of its subjects apply.
func (p *Policy) visit(u *user.User, namespace string, f func(*grant) bool) {
	var seen []*grant
	try := func(gs []*grant) bool {
		for _, g := range gs {
			dup := false
			for _, s := range seen {
				dup = dup || (s.kind == g.kind && s.namespace == g.namespace && s.name == g.name)
			}
			if dup {
				continue
			}
			seen = append(seen, g)
			if !f(g) {
				return false
			}
		}
		return true
	}
	indexes := []bindingIndex{p.cluster}
	if ix, ok := p.namespaces[namespace]; ok && namespace != "" {
		indexes = append(indexes, ix)
	}
	for _, ix := range indexes {
		if !try(ix.byUser[u.Name]) {
			return
		}
		for _, group := range u.Groups {
			if !try(ix.byGroup[group]) {
				return
			}
		}
	}
}

// Authorize is kube's RBAC decision: allowed when some rule of some role bound to the user
// (or a group of theirs, or their service account) allows the request; otherwise no opinion,
// with the bindings that could not be resolved as the reason.
func (p *Policy) Authorize(u *user.User, info *requestinfo.RequestInfo) (bool, string) {
	var allowedBy *grant
	var errs []error
	p.visit(u, info.Namespace, func(g *grant) bool {
		rules, err := p.rules(g)
		if err != nil {
			errs = append(errs, err)
			return true
		}
		for i := range rules {
			if RuleAllows(info, &rules[i]) {
				allowedBy = g
				return false
			}
		}
		return true
	})
	if allowedBy != nil {
		return true, "RBAC: allowed by " + allowedBy.describe()
	}
	if len(errs) > 0 {
		return false, fmt.Sprintf("RBAC: %v", utilerrors.NewAggregate(errs))
	}
	return false, ""
}

// Rules lists every rule that applies to u in namespace, and the bindings that could not
// be resolved (SelfSubjectRulesReview).
func (p *Policy) Rules(u *user.User, namespace string) ([]rbacv1.PolicyRule, error) {
	var out []rbacv1.PolicyRule
	var errs []error
	p.visit(u, namespace, func(g *grant) bool {
		rules, err := p.rules(g)
		if err != nil {
			errs = append(errs, err)
		}
		out = append(out, rules...)
		return true
	})
	return out, utilerrors.NewAggregate(errs)
}

func (g *grant) describe() string {
	subject := fmt.Sprintf("%s %q", g.subject.Kind, g.subject.Name)
	if g.subject.Kind == rbacv1.ServiceAccountKind {
		ns := g.subject.Namespace
		if ns == "" {
			ns = g.namespace
		}
		subject = fmt.Sprintf("%s %q", g.subject.Kind, g.subject.Name+"/"+ns)
	}
	name := g.name
	if g.namespace != "" {
		name += "/" + g.namespace
	}
	return fmt.Sprintf("%s %q of %s %q to %s", g.kind, name, g.roleRef.Kind, g.roleRef.Name, subject)
}

// RuleAllows is kube's rule match: verb, group, resource (with "*" and "*/subresource"),
// resource name; or verb and non-resource URL (with a trailing "*" as a prefix match).
func RuleAllows(info *requestinfo.RequestInfo, rule *rbacv1.PolicyRule) bool {
	if !matches(rule.Verbs, info.Verb, rbacv1.VerbAll) {
		return false
	}
	if !info.IsResourceRequest {
		for _, u := range rule.NonResourceURLs {
			if u == rbacv1.NonResourceAll || u == info.Path ||
				(strings.HasSuffix(u, "*") && strings.HasPrefix(info.Path, strings.TrimRight(u, "*"))) {
				return true
			}
		}
		return false
	}
	if !matches(rule.APIGroups, info.APIGroup, rbacv1.APIGroupAll) || !resourceMatches(rule.Resources, info.Resource, info.Subresource) {
		return false
	}
	return len(rule.ResourceNames) == 0 || matches(rule.ResourceNames, info.Name, "")
}

func matches(list []string, want, all string) bool {
	for _, v := range list {
		if v == want || (all != "" && v == all) {
			return true
		}
	}
	return false
}

func resourceMatches(ruleResources []string, resource, subresource string) bool {
	combined := resource
	if subresource != "" {
		combined += "/" + subresource
	}
	for _, r := range ruleResources {
		if r == rbacv1.ResourceAll || r == combined {
			return true
		}
		if subresource != "" && len(r) == len(subresource)+2 && strings.HasPrefix(r, "*/") && strings.HasSuffix(r, subresource) {
			return true
		}
	}
	return false
}

// PolicyOf indexes RBAC objects of any of the four kinds, in any order; others are ignored.
func PolicyOf[T any](objects []T) *Policy {
	var (
		clusterRoles    []*rbacv1.ClusterRole
		roles           []*rbacv1.Role
		clusterBindings []*rbacv1.ClusterRoleBinding
		bindings        []*rbacv1.RoleBinding
	)
	for _, o := range objects {
		switch o := any(o).(type) {
		case *rbacv1.ClusterRole:
			clusterRoles = append(clusterRoles, o)
		case *rbacv1.Role:
			roles = append(roles, o)
		case *rbacv1.ClusterRoleBinding:
			clusterBindings = append(clusterBindings, o)
		case *rbacv1.RoleBinding:
			bindings = append(bindings, o)
		}
	}
	return NewPolicy(clusterRoles, roles, clusterBindings, bindings)
}
