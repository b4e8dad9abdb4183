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

// WithAuthentication identifies the user; credentials are stripped before delegation so
// backends only ever see the identity the gateway established.
//
// As kube's union authenticator, an authenticator's error does not end the search: a later
// one may still succeed (a bad token, then a good client certificate). But a request that
// presented bad credentials and nothing good is 401, never anonymous.
func WithAuthentication(next http.Handler, a authn.Authentication, log *slog.Logger, auditor *audit.Auditor) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		failed := false
		for _, authenticator := range a.Authenticators {
			u, ok, err := authenticator.AuthenticateRequest(r)
			if err != nil {
				log.Debug("authentication failed", "path", r.URL.Path, "err", err)
				failed = true
				continue
			}
			if ok {
				r.Header.Del("Authorization")
				next.ServeHTTP(w, r.WithContext(user.WithUser(r.Context(), authn.WithAuthenticatedGroup(u))))
				return
			}
		}
		if failed {
			unauthorized(w, r, auditor)
			return
		}
		if a.Anonymous {
			u := &user.User{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}
			next.ServeHTTP(w, r.WithContext(user.WithUser(r.Context(), u)))
			return
		}
		unauthorized(w, r, auditor)
	})
}

func unauthorized(w http.ResponseWriter, r *http.Request, auditor *audit.Auditor) {
	st := rpcstatus.NewStatus(http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "Unauthorized")
	FailedAuthentication(auditor, r, st)
	WriteStatus(w, st)
}
