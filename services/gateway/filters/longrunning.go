package filters

import (
	"net/http"
	"strings"

	"github.com/apichain/apichain/pkg/requestinfo"
)

var longRunningSubresources = map[string]bool{"attach": true, "exec": true, "proxy": true, "log": true, "portforward": true}

// IsLongRunning is kube's basic long-running check (watch, proxy and the streaming
// subresources), plus every gRPC call on this port, unary ones included: those carry the
// client's own deadline (grpc-timeout), and the gRPC server ends its streams at shutdown.
func IsLongRunning(r *http.Request) bool {
	if IsGRPC(r) {
		return true
	}
	info, ok := requestinfo.From(r.Context())
	if !ok {
		return false
	}
	if info.Verb == "watch" || info.Verb == "proxy" {
		return true
	}
	return info.IsResourceRequest && longRunningSubresources[info.Subresource]
}

// IsGRPC reports whether r is a gRPC call served on the HTTPS port.
func IsGRPC(r *http.Request) bool {
	return r.ProtoMajor == 2 && strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc")
}
