package app

import (
	"net/http"
	"strings"

	lifecyclev1 "github.com/apichain/apichain/gen/apichain/lifecycle/v1"
	"github.com/apichain/apichain/pkg/discovery"
	"github.com/apichain/apichain/pkg/requestinfo"
	"github.com/apichain/apichain/services/gateway/connect"
	"github.com/apichain/apichain/services/gateway/proxy"
	"github.com/apichain/apichain/services/gateway/reviews"
	"github.com/apichain/apichain/services/gateway/serviceaccount"
)

// serveDelegated answers what no local route serves: the reviews and TokenRequests here, where authentication
// and authorization live; resources and API documents down the chain; anything else 404.
func (g *Gateway) serveDelegated(w http.ResponseWriter, r *http.Request) {
	info, _ := requestinfo.From(r.Context())
	if group, version, ok := g.proxied(r, info); ok {
		g.aggregated.Serve(w, r, group, version)
		return
	}
	switch {
	case reviews.IsReview(info):
		g.reviews.ServeHTTP(w, r)
	case serviceaccount.IsTokenRequest(info):
		g.saTokens.ServeTokenRequest(w, r)
	case connect.Is(info):
		g.connect.ServeHTTP(w, r)
	case info != nil && info.IsResourceRequest:
		g.rest.ServeResource(w, r, info)
	case r.Method == http.MethodGet && proxy.IsAPIPath(r.URL.Path):
		g.documents.Serve(w, r)
	default:
		proxy.NotFound(w, r)
	}
}

// proxied says whether r is a request under /apis/<group>/<version> of a remote APIService,
// which the aggregator forwards to its aggregated API server (as kube's aggregator does, that
// goes for any group/version, a built-in one included).
func (g *Gateway) proxied(r *http.Request, info *requestinfo.RequestInfo) (group, version string, ok bool) {
	if info != nil && info.IsResourceRequest {
		group, version = info.APIGroup, info.APIVersion
	} else if parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 4); len(parts) >= 3 && parts[0] == "apis" {
		group, version = parts[1], parts[2]
	}
	return group, version, group != "" && version != "" && g.router.Proxied(discovery.GroupVersion(group, version))
}

// startupStates are the instances on the startup timeline: the gateway itself and every
// instance it knows of.
func (g *Gateway) startupStates() []*lifecyclev1.InstanceState {
	own := g.Snapshot()
	out := []*lifecyclev1.InstanceState{own}
	for _, st := range g.registry.Instances() {
		if st.GetService() != own.GetService() || st.GetInstanceId() != own.GetInstanceId() {
			out = append(out, st)
		}
	}
	return out
}
