package filters

import (
	"context"
	"net/http"

	"github.com/google/uuid"
)

// AuditIDHeader is kube's audit ID header.
const AuditIDHeader = "Audit-ID"

type auditIDKey struct{}

// WithAuditID gives every request an audit ID (the client's, if it sent one) and echoes it
// in the response, so a request can be followed through the gateway and the backends' logs.
func WithAuditID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(AuditIDHeader)
		if id == "" || len(id) > 128 {
			id = uuid.NewString()
		}
		w.Header().Set(AuditIDHeader, id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), auditIDKey{}, id)))
	})
}

// AuditIDFrom returns the request's audit ID.
func AuditIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(auditIDKey{}).(string)
	return id
}
