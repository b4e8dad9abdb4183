package apiservice

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	discoveryv1 "github.com/apichain/apichain/gen/apichain/discovery/v1"
	"github.com/apichain/apichain/pkg/apiregistration"
	"github.com/apichain/apichain/pkg/discovery"
	"github.com/apichain/apichain/pkg/registry"
	"google.golang.org/protobuf/proto"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Fetch reads a remote APIService's discovery document.
type Fetch func(ctx context.Context, a *apiregistration.APIService) (*metav1.APIResourceList, error)

// RunRemoteDiscovery keeps what the aggregator lists of the remote APIServices in its
// discovery documents (/apis, aggregated discovery): their resources as their servers list
// them, read again on every change to APIServices and every resync. One that is not available
// keeps the resources its server listed last, marked stale (kubectl then leaves it out rather
// than failing), or is left out if they were never read; either way warn names it, for the
// Warning headers of /apis. set gets own plus the remote group/versions; proxied gets the
// remote group/versions (the ones the aggregator proxies) before their servers are asked.
func RunRemoteDiscovery(ctx context.Context, c *registry.Client, own []*discoveryv1.GroupVersion, fetch Fetch,
	set func([]*discoveryv1.GroupVersion), proxied, warn func([]string), log *slog.Logger, resync time.Duration) {
	r, _ := c.Lookup(apiregistration.SchemeGroupVersion.WithResource("apiservices"))
	known := map[string]*discoveryv1.GroupVersion{} // by APIService name, as last read
	var last []*discoveryv1.GroupVersion
	var lastWarnings, lastProxied []string
	registry.Reconcile(ctx, c, r, resync, func(ctx context.Context) error {
		list, err := c.ListShared(ctx, r, "", "") // read only
		if err != nil {
			return err
		}
		remote := []string{}
		for _, o := range list {
			if a := o.(*apiregistration.APIService); a.Spec.Service != nil {
				remote = append(remote, discovery.GroupVersion(a.Spec.Group, a.Spec.Version))
			}
		}
		slices.Sort(remote)
		if !slices.Equal(remote, lastProxied) {
			proxied(remote)
			lastProxied = remote
		}
		current := map[string]*discoveryv1.GroupVersion{}
		var warnings []string
		for _, o := range list {
			a := o.(*apiregistration.APIService)
			if a.Spec.Service == nil {
				continue
			}
			cond := a.Status.AvailableCondition()
			problem := ""
			switch {
			case cond == nil || cond.Status != apiregistration.ConditionTrue:
				problem = "not available"
				if cond != nil && cond.Reason != "" {
					problem += " (" + cond.Reason + ": " + cond.Message + ")"
				}
			default:
				rl, err := fetch(ctx, a)
				if err != nil {
					problem = "not answering discovery: " + err.Error()
					break
				}
				known[a.Name] = groupVersion(a, rl)
			}
			gv, ok := known[a.Name]
			if !ok {
				if problem != "" {
					warnings = append(warnings, fmt.Sprintf("APIService %s is %s; %s/%s is left out of discovery", a.Name, problem, a.Spec.Group, a.Spec.Version))
				}
				continue
			}
			if problem != "" {
				gv = proto.CloneOf(gv)
				gv.Stale = true
				warnings = append(warnings, fmt.Sprintf("APIService %s is %s; %s/%s is listed as its server last listed it (stale)", a.Name, problem, a.Spec.Group, a.Spec.Version))
			}
			current[a.Name] = gv
		}
		for name := range known {
			if _, ok := current[name]; !ok {
				delete(known, name)
			}
		}
		names := make([]string, 0, len(current))
		for name := range current {
			names = append(names, name)
		}
		slices.Sort(names)
		next := slices.Clone(own)
		for _, name := range names {
			next = append(next, current[name])
		}
		if !equalServed(next, last) {
			set(next)
			last = next
		}
		slices.Sort(warnings)
		if !slices.Equal(warnings, lastWarnings) {
			warn(warnings)
			lastWarnings = warnings
		}
		return nil
	})
}

// groupVersion is a's group/version with the resources its server listed ("flunders/status"
// become flunders' subresources).
func groupVersion(a *apiregistration.APIService, rl *metav1.APIResourceList) *discoveryv1.GroupVersion {
	gv := &discoveryv1.GroupVersion{Group: a.Spec.Group, Version: a.Spec.Version}
	byName := map[string]*discoveryv1.Resource{}
	for _, ar := range rl.APIResources {
		if parent, sub, ok := strings.Cut(ar.Name, "/"); ok {
			if p := byName[parent]; p != nil {
				p.Subresources = append(p.Subresources, sub)
			}
			continue
		}
		res := &discoveryv1.Resource{Name: ar.Name, SingularName: ar.SingularName, Namespaced: ar.Namespaced, Kind: ar.Kind,
			Verbs: ar.Verbs, ShortNames: ar.ShortNames, Categories: ar.Categories}
		byName[ar.Name] = res
		gv.Resources = append(gv.Resources, res)
	}
	return gv
}

func equalServed(a, b []*discoveryv1.GroupVersion) bool {
	return slices.EqualFunc(a, b, func(x, y *discoveryv1.GroupVersion) bool { return proto.Equal(x, y) })
}

// GroupOrder is the order of the groups in /apis, as kube's aggregator lists them: its own
// group first, then by the highest groupPriorityMinimum of each group's APIServices (ties by
// APIService name).
func GroupOrder(c *registry.Client) func(ctx context.Context) ([]string, error) {
	r, _ := c.Lookup(apiregistration.SchemeGroupVersion.WithResource("apiservices"))
	return func(ctx context.Context) ([]string, error) {
		list, err := c.ListCached(ctx, r, "")
		if err != nil {
			return nil, err
		}
		services := make([]*apiregistration.APIService, 0, len(list))
		for _, o := range list {
			services = append(services, o.(*apiregistration.APIService))
		}
		slices.SortStableFunc(services, func(a, b *apiregistration.APIService) int {
			if a.Spec.GroupPriorityMinimum != b.Spec.GroupPriorityMinimum {
				return int(b.Spec.GroupPriorityMinimum) - int(a.Spec.GroupPriorityMinimum)
			}
			return strings.Compare(a.Name, b.Name)
		})
		order := []string{apiregistration.GroupName}
		for _, a := range services {
			if a.Spec.Group != "" && !slices.Contains(order, a.Spec.Group) {
				order = append(order, a.Spec.Group)
			}
		}
		return order, nil
	}
}
