package filters

import (
	"context"
	"fmt"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WithRequestDeadline gives non-long-running requests a deadline: the client's ?timeout=
// when it is shorter than the server's --request-timeout, else the server's.
func WithRequestDeadline(next http.Handler, requestTimeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if IsLongRunning(r) {
			next.ServeHTTP(w, r)
			return
		}
		timeout := requestTimeout
		if s := r.URL.Query().Get("timeout"); s != "" {
			d, err := time.ParseDuration(s)
			if err != nil {
				WriteError(w, http.StatusBadRequest, metav1.StatusReasonBadRequest,
					fmt.Sprintf("invalid timeout specified in the request URL - %v", err))
				return
			}
			if d > 0 && d < timeout {
				timeout = d
			}
		}
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}
