package filters

import (
	"errors"
	"log/slog"
	"net/http"
	"runtime/debug"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/apichain/apichain/pkg/audit"
)

// WithPanicRecovery turns a handler panic into a 500 Status and keeps the server serving.
// http.ErrAbortHandler is re-raised: it is net/http's way to abort a response on purpose.
func WithPanicRecovery(next http.Handler, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			rec := recover()
			if rec == nil {
				return
			}
			if err, ok := rec.(error); ok && errors.Is(err, http.ErrAbortHandler) {
				panic(rec)
			}
			log.Error("request handler panicked", "method", r.Method, "path", r.URL.Path,
				"auditID", audit.IDFrom(r.Context()), "panic", rec, "stack", string(debug.Stack()))
			WriteError(w, http.StatusInternalServerError, metav1.StatusReasonInternalError,
				"This request caused apiserver to panic. Look in the logs for details.")
		}()
		next.ServeHTTP(w, r)
	})
}
