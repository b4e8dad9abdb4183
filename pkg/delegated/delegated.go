// Package delegated protects an HTTPS endpoint of a process that is not the API server (a
// backend's /metrics) as kube's components protect theirs: the caller is authenticated by a
// client certificate of the cluster CA or by a bearer token the API server's TokenReview
// accepts, and must be allowed the request's verb on its path (a non-resource URL) by the API
// server's SubjectAccessReview. Answers are kept 10 s, allowed and denied alike, as kube's
// delegating authenticator and authorizer keep them.
package delegated

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"

	"github.com/apichain/apichain/pkg/authn"
	"github.com/apichain/apichain/pkg/user"
)

// CacheTTL is how long a review's answer is kept (kube's defaults for delegated authentication
// and authorization, allowed and denied).
const CacheTTL = 10 * time.Second

// Authorizer asks the API server whether a user may make a non-resource request.
type Authorizer struct {
	reviews authorizationv1client.SubjectAccessReviewInterface
	now     func() time.Time
	mu      sync.Mutex
	cache   map[string]decision
}

type decision struct {
	allowed bool
	reason  string
	expires time.Time
}

// NewAuthorizer asks reviews.
func NewAuthorizer(reviews authorizationv1client.SubjectAccessReviewInterface) *Authorizer {
	return &Authorizer{reviews: reviews, now: time.Now, cache: map[string]decision{}}
}

// maxDecisions bounds the kept answers; past it they are forgotten at once.
const maxDecisions = 4096

// Allowed says whether u may make verb on path, and the API server's reason.
func (a *Authorizer) Allowed(ctx context.Context, u *user.User, verb, path string) (bool, string, error) {
	groups := slices.Clone(u.Groups)
	slices.Sort(groups)
	key := strings.Join([]string{u.Name, u.UID, strings.Join(groups, ","), verb, path}, "\x00")
	a.mu.Lock()
	if d, ok := a.cache[key]; ok && a.now().Before(d.expires) {
		a.mu.Unlock()
		return d.allowed, d.reason, nil
	}
	a.mu.Unlock()

	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range u.Extra {
		extra[k] = v
	}
	review, err := a.reviews.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: u.Name, UID: u.UID, Groups: u.Groups, Extra: extra,
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
	}}, metav1.CreateOptions{})
	if err != nil {
		return false, "", err
	}
	d := decision{allowed: review.Status.Allowed && !review.Status.Denied, reason: review.Status.Reason, expires: a.now().Add(CacheTTL)}
	a.mu.Lock()
	if len(a.cache) >= maxDecisions {
		clear(a.cache)
	}
	a.cache[key] = d
	a.mu.Unlock()
	return d.allowed, d.reason, nil
}

// Protect serves next to callers authn authenticates and authz allows the request's verb (the
// lowercase HTTP method, as kube names a non-resource verb) on its path. Others get kube's
// Status: 401 without credentials it accepts, 403 when not allowed, 500 when a review could
// not be made.
func Protect(next http.Handler, authentication authn.Authentication, authz *Authorizer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, ok, _ := authentication.Authenticate(r)
		if !ok {
			writeStatus(w, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "Unauthorized")
			return
		}
		verb := strings.ToLower(r.Method)
		allowed, reason, err := authz.Allowed(r.Context(), u, verb, r.URL.Path)
		if err != nil {
			writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "Authorization error (user="+u.Name+", verb="+verb+", resource=, subresource=): "+err.Error())
			return
		}
		if !allowed {
			msg := fmt.Sprintf("forbidden: User %q cannot %s path %q", u.Name, verb, r.URL.Path)
			if reason != "" {
				msg += ": " + reason
			}
			writeStatus(w, http.StatusForbidden, metav1.StatusReasonForbidden, msg)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, message string) {
	body, _ := json.Marshal(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
		Message: message, Reason: reason, Code: int32(code)})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write(append(body, '\n'))
}
