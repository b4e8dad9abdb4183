package backend

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"sync/atomic"

	discoveryv1 "github.com/apichain/apichain/gen/apichain/discovery/v1"
	"github.com/apichain/apichain/pkg/discovery"
	"github.com/apichain/apichain/pkg/rpcstatus"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Discovery serves a backend's own discovery documents: /api and /api/v1 for the legacy
// group, /apis/<group> and /apis/<group>/<version> for the others.
type Discovery struct {
	discoveryv1.UnimplementedDiscoveryServiceServer
	served atomic.Pointer[[]*discoveryv1.GroupVersion]
	// warnings go with the group lists (/api, /apis): what a client should know of them.
	warnings atomic.Pointer[[]string]
	// groupOrder, when set, answers discovery.GroupOrderQuery: the order of every group in /apis.
	groupOrder atomic.Pointer[func(context.Context) ([]string, error)]
	openapi    *lazyOpenAPI
	custom     atomic.Pointer[customOpenAPI]
}

// NewDiscovery serves the given group/versions (in preference order per group).
func NewDiscovery(served []*discoveryv1.GroupVersion) *Discovery {
	d := &Discovery{}
	d.setServed(served)
	return d
}

func (d *Discovery) setServed(served []*discoveryv1.GroupVersion) { d.served.Store(&served) }

// list is what is served now.
func (d *Discovery) list() []*discoveryv1.GroupVersion { return *d.served.Load() }

// ServedNames lists "group/version" ("v1" for the legacy group).
func (d *Discovery) ServedNames() []string {
	out := make([]string, 0, len(d.list()))
	for _, gv := range d.list() {
		out = append(out, discovery.GroupVersion(gv.GetGroup(), gv.GetVersion()))
	}
	return out
}

// GetDocument returns this server's discovery documents by path.
func (d *Discovery) GetDocument(ctx context.Context, req *discoveryv1.GetDocumentRequest) (*httpbody.HttpBody, error) {
	path := strings.TrimSuffix(req.GetPath(), "/")
	if order := d.groupOrder.Load(); order != nil && path == "/apis" && req.GetQuery() == discovery.GroupOrderQuery {
		groups, err := (*order)(ctx)
		if err != nil {
			return nil, err
		}
		data, err := json.Marshal(groups)
		if err != nil {
			return nil, err
		}
		return &httpbody.HttpBody{ContentType: "application/json", Data: data}, nil
	}
	if ws := d.warnings.Load(); ws != nil && len(*ws) > 0 && (path == "/api" || path == "/apis") {
		_ = grpc.SetHeader(ctx, metadata.Pairs(warningPairs(*ws)...))
	}
	if strings.HasPrefix(path, "/openapi/") {
		docs, err := d.openapi.get()
		if err != nil {
			return nil, err
		}
		if custom := d.custom.Load(); custom != nil {
			if doc, ok := custom.document(docs, path, req.GetAccept(), req.GetQuery()); ok {
				return doc, nil
			}
		}
		if doc, ok := docs.document(path, req.GetAccept(), req.GetQuery()); ok {
			return doc, nil
		}
	}
	if (path == "/api" || path == "/apis") && discovery.WantsAggregatedDiscovery(req.GetAccept()) {
		data, err := json.Marshal(d.aggregatedDiscovery(path == "/api"))
		if err != nil {
			return nil, err
		}
		return &httpbody.HttpBody{ContentType: discovery.AggregatedDiscoveryContentType, Data: data}, nil
	}
	doc, ok := d.document(path)
	if !ok {
		return nil, rpcstatus.NotServed(req.GetPath())
	}
	data, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	return &httpbody.HttpBody{ContentType: "application/json", Data: data}, nil
}

func (d *Discovery) document(path string) (any, bool) {
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	switch {
	case len(parts) == 1 && parts[0] == "api":
		versions := d.versions("")
		if len(versions) == 0 {
			return nil, false
		}
		return &metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: versions,
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{}}, true
	case len(parts) == 1 && parts[0] == "apis":
		return &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: d.Groups()}, true
	case len(parts) == 2 && parts[0] == "api":
		return d.resourceList("", parts[1])
	case len(parts) == 2 && parts[0] == "apis":
		g, ok := d.group(parts[1])
		if !ok {
			return nil, false
		}
		g.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
		return g, true
	case len(parts) == 3 && parts[0] == "apis" && parts[1] != "":
		return d.resourceList(parts[1], parts[2])
	}
	return nil, false
}

func (d *Discovery) versions(group string) []string {
	var out []string
	for _, gv := range d.list() {
		if gv.GetGroup() == group {
			out = append(out, gv.GetVersion())
		}
	}
	return out
}

// group returns the APIGroup document, the first served version preferred.
func (d *Discovery) group(name string) (*metav1.APIGroup, bool) {
	if name == "" {
		return nil, false
	}
	g := &metav1.APIGroup{Name: name}
	for _, v := range d.versions(name) {
		gvd := metav1.GroupVersionForDiscovery{GroupVersion: name + "/" + v, Version: v}
		g.Versions = append(g.Versions, gvd)
	}
	if len(g.Versions) == 0 {
		return nil, false
	}
	g.PreferredVersion = g.Versions[0]
	return g, true
}

// Groups returns the APIGroups this server serves (not the legacy group), in served order.
func (d *Discovery) Groups() []metav1.APIGroup {
	out := []metav1.APIGroup{}
	seen := map[string]bool{}
	for _, gv := range d.list() {
		// A group with no resources yet is not listed, as kube lists none: clients would
		// fail on an empty group/version.
		if gv.GetGroup() == "" || seen[gv.GetGroup()] || len(gv.GetResources()) == 0 {
			continue
		}
		seen[gv.GetGroup()] = true
		g, _ := d.group(gv.GetGroup())
		out = append(out, *g)
	}
	return out
}

func (d *Discovery) resourceList(group, version string) (*metav1.APIResourceList, bool) {
	for _, gv := range d.list() {
		if gv.GetGroup() != group || gv.GetVersion() != version {
			continue
		}
		list := &metav1.APIResourceList{
			TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: discovery.GroupVersion(group, version),
			APIResources: []metav1.APIResource{},
		}
		for _, r := range gv.GetResources() {
			list.APIResources = append(list.APIResources, apiResources(r)...)
		}
		return list, true
	}
	return nil, false
}

// apiResources is a resource and its subresources as kube lists them ("pods/status").
func apiResources(r *discoveryv1.Resource) []metav1.APIResource {
	verbs := append([]string(nil), r.GetVerbs()...)
	sort.Strings(verbs)
	out := []metav1.APIResource{{
		Name: r.GetName(), SingularName: r.GetSingularName(), Namespaced: r.GetNamespaced(), Kind: r.GetKind(),
		Verbs: verbs, ShortNames: r.GetShortNames(), Categories: r.GetCategories(),
	}}
	for _, sub := range r.GetSubresources() {
		k := subresourceKind(sub, r.GetKind())
		out = append(out, metav1.APIResource{Name: r.GetName() + "/" + sub, Namespaced: r.GetNamespaced(),
			Group: k.Group, Version: k.Version, Kind: k.Kind, Verbs: subresourceVerbs(sub)})
	}
	return out
}

func warningPairs(ws []string) []string {
	out := make([]string, 0, 2*len(ws))
	for _, w := range ws {
		out = append(out, rpcstatus.WarningMetadataKey, w)
	}
	return out
}
