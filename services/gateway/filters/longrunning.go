package filters

import (
	"net/http"
	"strings"

	"github.com/apichain/apichain/pkg/requestinfo"
)

var longRunningSubresources = map[string]bool{"attach": true, "exec": true, "proxy": true, "log": true, "portforward": true}

// IsLongRunning is kube's basic long-running check (watch, proxy and the streaming
// subresources), plus the streaming gRPC calls on this port (a watch, health's Watch,
// reflection): the gRPC server ends those at shutdown. A unary gRPC call is not long-running:
// it is limited, given a deadline and drained at shutdown as a REST request is.
func IsLongRunning(r *http.Request) bool {
	if IsGRPC(r) {
		return IsGRPCStream(r)
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

// IsGRPCStream reports whether r calls one of the streaming gRPC methods the gateway serves.
func IsGRPCStream(r *http.Request) bool {
	_, method, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	return method == "Watch" || method == "ServerReflectionInfo"
}

// IsGRPCReadOnly reports whether r calls a unary gRPC method that only reads (Get, List, a
// document, a health check), for the read-only in-flight limit.
func IsGRPCReadOnly(r *http.Request) bool {
	_, method, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	return strings.HasPrefix(method, "Get") || strings.HasPrefix(method, "List") || method == "Check"
}

// IsGRPC reports whether r is a gRPC call served on the HTTPS port.
func IsGRPC(r *http.Request) bool {
	return r.ProtoMajor == 2 && strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc")
}
