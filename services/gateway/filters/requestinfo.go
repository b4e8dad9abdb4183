package filters

import (
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/apichain/apichain/pkg/caller"
	"github.com/apichain/apichain/pkg/requestinfo"
)

// WithRequestInfo resolves kube's request info (verb, group, version, namespace, resource,
// subresource, name) from the path once, for every later filter and the router, and keeps the
// client's User-Agent for the backends (the default field manager of a write).
func WithRequestInfo(next http.Handler, resolver *requestinfo.Resolver) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, err := resolver.Resolve(r)
		if err != nil {
			WriteError(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "failed to create RequestInfo: "+err.Error())
			return
		}
		ctx := caller.WithUserAgent(requestinfo.WithRequestInfo(r.Context(), info), r.UserAgent())
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}
