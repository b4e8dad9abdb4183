package app

import (
	"net/http"

	lifecyclev1 "github.com/apichain/apichain/gen/apichain/lifecycle/v1"
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
