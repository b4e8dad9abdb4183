package filters

import (
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/apichain/apichain/pkg/server"
)

// WithWaitGroup counts non-long-running requests so shutdown can drain them; once draining
// started, new ones get 503 with Retry-After, since another replica can likely serve them.
// Health probes and metrics are exempt, as in WithRetryAfter.
func WithWaitGroup(next http.Handler, wg *server.SafeWaitGroup) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if IsLongRunning(r) {
			next.ServeHTTP(w, r)
			return
		}
		if err := wg.Add(1); err != nil {
			// Health probes and metrics keep being served, uncounted, as in kube.
			if isExemptFromRetryAfter(r) {
				next.ServeHTTP(w, r)
				return
			}
			w.Header().Set("Retry-After", "1")
			WriteError(w, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "apiserver is shutting down")
			return
		}
		defer wg.Done()
		next.ServeHTTP(w, r)
	})
}
