package filters

import (
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WithRetryAfter answers 429 with Retry-After and closes the connection once shouldRetry
// says so (after the shutdown delay with --shutdown-send-retry-after), so clients move on to
// another replica while in-flight requests drain. Health probes and metrics are exempt. A
// gRPC call gets 503, which WithGRPCStatus makes UNAVAILABLE: the code gRPC clients and their
// retry policies take to mean "try again, elsewhere" (RESOURCE_EXHAUSTED means "slow down").
func WithRetryAfter(next http.Handler, shouldRetry <-chan struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !closed(shouldRetry) || isExemptFromRetryAfter(r) {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Retry-After", "5")
		w.Header().Set("Connection", "close")
		code, reason := http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests
		if IsGRPC(r) {
			code, reason = http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable
		}
		WriteError(w, code, reason, "The apiserver is shutting down, please try again later.")
	})
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// pathPrefixesExemptFromRetryAfter are served even while shutting down, as in kube: health
// probes and metrics scraping must keep getting real answers while the server drains (gRPC
// health answers NOT_SERVING then).
var pathPrefixesExemptFromRetryAfter = []string{"/readyz", "/livez", "/healthz", "/metrics", "/grpc.health.v1.Health/"}

// isExemptFromRetryAfter is shared by WithRetryAfter and WithWaitGroup, as kube shares it, so
// the two filters never disagree about which requests are turned away.
func isExemptFromRetryAfter(r *http.Request) bool {
	for _, p := range pathPrefixesExemptFromRetryAfter {
		if strings.HasPrefix(r.URL.Path, p) {
			return true
		}
	}
	return false
}
