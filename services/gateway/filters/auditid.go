package filters

import (
	"net/http"

	"github.com/google/uuid"

	"github.com/apichain/apichain/pkg/audit"
)

// WithAuditID gives every request an audit ID (the client's, if it sent one) and echoes it
// in the response. The ID goes to the backends with the request, so it follows the request
// through the gateway's and the backends' logs.
func WithAuditID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(audit.IDHeader)
		if id == "" || len(id) > 128 {
			id = uuid.NewString()
		}
		w.Header().Set(audit.IDHeader, id)
		next.ServeHTTP(w, r.WithContext(audit.WithID(r.Context(), id)))
	})
}
