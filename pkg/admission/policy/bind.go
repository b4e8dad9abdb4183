package policy

import (
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// boundPolicy is an admission policy (validating or mutating) with the bindings that name it
// and what it compiled to.
type boundPolicy[P metav1.Object, B any, C any] struct {
	policy   P
	bindings []B
	compiled C
}

// bindPolicies pairs each policy, by name, with the bindings that name it (policyName), and
// compiles it unless previous holds the same version compiled already. Policies and bindings
// are sorted by name, as kube evaluates them.
func bindPolicies[P metav1.Object, B metav1.Object, C any](policies []P, bindings []B, policyName func(B) string,
	previous []*boundPolicy[P, B, C], compile func(P) C) []*boundPolicy[P, B, C] {
	sort.Slice(policies, func(i, j int) bool { return policies[i].GetName() < policies[j].GetName() })
	sort.Slice(bindings, func(i, j int) bool { return bindings[i].GetName() < bindings[j].GetName() })
	byName := map[string]*boundPolicy[P, B, C]{}
	for _, h := range previous {
		byName[h.policy.GetName()] = h
	}
	out := make([]*boundPolicy[P, B, C], 0, len(policies))
	for _, pol := range policies {
		h := &boundPolicy[P, B, C]{policy: pol}
		if old := byName[pol.GetName()]; old != nil && old.policy.GetResourceVersion() == pol.GetResourceVersion() {
			h.compiled = old.compiled // unchanged: no recompilation
		} else {
			h.compiled = compile(pol)
		}
		for _, b := range bindings {
			if policyName(b) == pol.GetName() {
				h.bindings = append(h.bindings, b)
			}
		}
		out = append(out, h)
	}
	return out
}
