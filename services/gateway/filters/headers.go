package filters

import "net/http"

// WithCacheControl marks API responses uncacheable, as kube does.
func WithCacheControl(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if w.Header().Get("Cache-Control") == "" {
			w.Header().Set("Cache-Control", "no-cache, private")
		}
		next.ServeHTTP(w, r)
	})
}

// WithHSTS sets Strict-Transport-Security when directives are configured.
func WithHSTS(next http.Handler, directives string) http.Handler {
	if directives == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Strict-Transport-Security", directives)
		next.ServeHTTP(w, r)
	})
}
