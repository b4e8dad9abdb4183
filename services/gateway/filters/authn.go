package filters

import (
	"log/slog"
	"net/http"

	"github.com/apichain/apichain/pkg/authn"
	"github.com/apichain/apichain/pkg/rpcstatus"
	"github.com/apichain/apichain/pkg/user"
	"github.com/apichain/apichain/services/gateway/audit"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WithAuthentication identifies the user (authn.Authentication.Authenticate: kube's union
// authenticator, then anonymous if allowed); credentials are stripped before delegation so
// backends only ever see the identity the gateway established.
func WithAuthentication(next http.Handler, a authn.Authentication, log *slog.Logger, auditor *audit.Auditor) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, ok, errs := a.Authenticate(r)
		for _, err := range errs {
			log.Debug("authentication failed", "path", r.URL.Path, "err", err)
		}
		if !ok {
			unauthorized(w, r, auditor)
			return
		}
		if u.Name != user.Anonymous {
			r.Header.Del("Authorization")
		}
		next.ServeHTTP(w, r.WithContext(user.WithUser(r.Context(), u)))
	})
}

func unauthorized(w http.ResponseWriter, r *http.Request, auditor *audit.Auditor) {
	st := rpcstatus.NewStatus(http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "Unauthorized")
	FailedAuthentication(auditor, r, st)
	WriteStatus(w, st)
}
