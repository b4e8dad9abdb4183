package backend

import (
	"sort"

	discoveryv1 "github.com/apichain/apichain/gen/apichain/discovery/v1"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// subresourceVerbs and subresourceKind describe subresources as kube serves them.
func subresourceVerbs(name string) []string {
	switch name {
	case "finalize":
		return []string{"update"}
	case "token", "binding", "eviction":
		return []string{"create"}
	case "attach", "exec", "portforward":
		return []string{"create", "get"}
	case "log":
		return []string{"get"}
	case "proxy":
		return []string{"create", "delete", "get", "patch", "update"}
	}
	return []string{"get", "patch", "update"}
}

func subresourceKind(name, kind string) *metav1.GroupVersionKind {
	switch name {
	case "scale":
		return &metav1.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}
	case "token": // serviceaccounts/token, answered by the gateway
		return &metav1.GroupVersionKind{Group: "authentication.k8s.io", Version: "v1", Kind: "TokenRequest"}
	case "binding":
		return &metav1.GroupVersionKind{Kind: "Binding"}
	case "eviction":
		return &metav1.GroupVersionKind{Group: "policy", Version: "v1", Kind: "Eviction"}
	case "attach", "exec", "portforward", "proxy": // answered by the gateway: PodExecOptions, NodeProxyOptions, ...
		return &metav1.GroupVersionKind{Kind: kind + map[string]string{"attach": "Attach", "exec": "Exec", "portforward": "PortForward", "proxy": "Proxy"}[name] + "Options"}
	}
	return &metav1.GroupVersionKind{Kind: kind}
}

// aggregated returns the APIGroupDiscoveryList for the legacy group (legacy=true, /api) or
// for the named groups (/apis), versions in preference order.
func (d *Discovery) aggregatedDiscovery(legacy bool) *apidiscoveryv2.APIGroupDiscoveryList {
	list := &apidiscoveryv2.APIGroupDiscoveryList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupDiscoveryList", APIVersion: "apidiscovery.k8s.io/v2"},
		Items: []apidiscoveryv2.APIGroupDiscovery{}}
	idx := map[string]int{}
	for _, gv := range d.list() {
		if (gv.GetGroup() == "") != legacy || len(gv.GetResources()) == 0 {
			continue
		}
		i, ok := idx[gv.GetGroup()]
		if !ok {
			i = len(list.Items)
			idx[gv.GetGroup()] = i
			list.Items = append(list.Items, apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: gv.GetGroup()}})
		}
		v := apidiscoveryv2.APIVersionDiscovery{Version: gv.GetVersion(), Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
		if gv.GetStale() {
			v.Freshness = apidiscoveryv2.DiscoveryFreshnessStale
		}
		for _, r := range gv.GetResources() {
			v.Resources = append(v.Resources, aggregatedDiscoveryResource(r))
		}
		list.Items[i].Versions = append(list.Items[i].Versions, v)
	}
	return list
}

func aggregatedDiscoveryResource(r *discoveryv1.Resource) apidiscoveryv2.APIResourceDiscovery {
	scope := apidiscoveryv2.ScopeCluster
	if r.GetNamespaced() {
		scope = apidiscoveryv2.ScopeNamespace
	}
	verbs := append([]string(nil), r.GetVerbs()...)
	sort.Strings(verbs)
	out := apidiscoveryv2.APIResourceDiscovery{
		Resource: r.GetName(), ResponseKind: &metav1.GroupVersionKind{Kind: r.GetKind()}, Scope: scope,
		SingularResource: r.GetSingularName(), Verbs: verbs, ShortNames: r.GetShortNames(), Categories: r.GetCategories(),
	}
	for _, sub := range r.GetSubresources() {
		out.Subresources = append(out.Subresources, apidiscoveryv2.APISubresourceDiscovery{
			Subresource: sub, ResponseKind: subresourceKind(sub, r.GetKind()), Verbs: subresourceVerbs(sub)})
	}
	return out
}
