package rbac

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/apichain/apichain/pkg/user"
	rbacv1 "k8s.io/api/rbac/v1"
)

// Covers is kube's escalation comparison: whether owner's rules allow everything servant's
// do, and the atomic rules (one group, resource, verb and name each) they do not.
func Covers(owner, servant []rbacv1.PolicyRule) (bool, []rbacv1.PolicyRule) {
	var uncovered []rbacv1.PolicyRule
	for _, s := range servant {
		for _, sub := range breakdown(s) {
			if !slices.ContainsFunc(owner, func(o rbacv1.PolicyRule) bool { return ruleCovers(o, sub) }) {
				uncovered = append(uncovered, sub)
			}
		}
	}
	return len(uncovered) == 0, uncovered
}

// breakdown splits a rule into rules of one group, resource, verb and resource name, or of
// one non-resource URL and verb.
func breakdown(r rbacv1.PolicyRule) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, g := range r.APIGroups {
		for _, res := range r.Resources {
			for _, v := range r.Verbs {
				if len(r.ResourceNames) == 0 {
					out = append(out, rbacv1.PolicyRule{APIGroups: []string{g}, Resources: []string{res}, Verbs: []string{v}})
				}
				for _, n := range r.ResourceNames {
					out = append(out, rbacv1.PolicyRule{APIGroups: []string{g}, Resources: []string{res}, Verbs: []string{v}, ResourceNames: []string{n}})
				}
			}
		}
	}
	for _, u := range r.NonResourceURLs {
		for _, v := range r.Verbs {
			out = append(out, rbacv1.PolicyRule{NonResourceURLs: []string{u}, Verbs: []string{v}})
		}
	}
	return out
}

func hasAll(set, want []string) bool {
	for _, w := range want {
		if !slices.Contains(set, w) {
			return false
		}
	}
	return true
}

// resourcesCover lets "*" and "*/subresource" cover, as kube does.
func resourcesCover(owner, want []string) bool {
	if slices.Contains(owner, rbacv1.ResourceAll) {
		return true
	}
	for _, w := range want {
		if slices.Contains(owner, w) {
			continue
		}
		_, sub, ok := strings.Cut(w, "/")
		if !ok || !slices.Contains(owner, "*/"+sub) {
			return false
		}
	}
	return true
}

func urlsCover(owner, want []string) bool {
	for _, w := range want {
		if !slices.ContainsFunc(owner, func(o string) bool {
			return o == w || (strings.HasSuffix(o, "*") && strings.HasPrefix(w, strings.TrimRight(o, "*")))
		}) {
			return false
		}
	}
	return true
}

// ruleCovers reports whether owner covers sub, an atomic rule.
func ruleCovers(owner, sub rbacv1.PolicyRule) bool {
	names := len(owner.ResourceNames) == 0 || (len(sub.ResourceNames) > 0 && hasAll(owner.ResourceNames, sub.ResourceNames))
	return (slices.Contains(owner.Verbs, rbacv1.VerbAll) || hasAll(owner.Verbs, sub.Verbs)) &&
		(slices.Contains(owner.APIGroups, rbacv1.APIGroupAll) || hasAll(owner.APIGroups, sub.APIGroups)) &&
		resourcesCover(owner.Resources, sub.Resources) && urlsCover(owner.NonResourceURLs, sub.NonResourceURLs) && names
}

// compact merges atomic resource rules that differ only in their verb, as kube's
// CompactRules does for the escalation message.
func compact(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	index := map[string]int{}
	for _, r := range rules {
		if len(r.APIGroups) != 1 || len(r.Resources) != 1 || len(r.NonResourceURLs) > 0 {
			out = append(out, r)
			continue
		}
		key := r.APIGroups[0] + "\x00" + r.Resources[0] + "\x00" + strings.Join(r.ResourceNames, "\x00")
		if i, ok := index[key]; ok {
			out[i].Verbs = append(out[i].Verbs, r.Verbs...)
			continue
		}
		index[key] = len(out)
		out = append(out, *r.DeepCopy())
	}
	return out
}

// compactString is kube's CompactString of a rule, as escalation errors print it.
func compactString(r rbacv1.PolicyRule) string {
	var parts []string
	add := func(name string, v []string) {
		if len(v) > 0 {
			parts = append(parts, fmt.Sprintf("%s:%q", name, v))
		}
	}
	add("APIGroups", r.APIGroups)
	add("Resources", r.Resources)
	add("NonResourceURLs", r.NonResourceURLs)
	add("ResourceNames", r.ResourceNames)
	add("Verbs", r.Verbs)
	return "{" + strings.Join(parts, ", ") + "}"
}

// ConfirmNoEscalation is kube's check that u already holds every rule it is granting:
// nil, or the error kube answers with (wrapped by the caller in a 403).
func (p *Policy) ConfirmNoEscalation(u *user.User, namespace string, rules []rbacv1.PolicyRule) error {
	owned, resolveErr := p.Rules(u, namespace)
	ok, missing := Covers(owned, rules)
	if ok {
		return nil
	}
	var descriptions []string
	for _, r := range compact(missing) {
		descriptions = append(descriptions, compactString(r))
	}
	sort.Strings(descriptions)
	descriptions = slices.Compact(descriptions)
	msg := fmt.Sprintf("user %q (groups=%q) is attempting to grant RBAC permissions not currently held:\n%s",
		u.Name, u.Groups, strings.Join(descriptions, "\n"))
	if resolveErr != nil {
		msg += fmt.Sprintf("; resolution errors: [%v]", resolveErr)
	}
	return fmt.Errorf("%s", msg)
}

// RoleRules are the rules a binding's roleRef grants in namespace ("" for a cluster binding).
func (p *Policy) RoleRules(ref rbacv1.RoleRef, namespace string) ([]rbacv1.PolicyRule, error) {
	return p.rules(&grant{roleRef: ref, namespace: namespace})
}
