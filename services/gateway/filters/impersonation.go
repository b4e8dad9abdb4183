package filters

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/apichain/apichain/pkg/rbac"
	"github.com/apichain/apichain/pkg/requestinfo"
	"github.com/apichain/apichain/pkg/user"
	"github.com/apichain/apichain/services/gateway/audit"
	"github.com/apichain/apichain/services/gateway/authz"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// impersonation is one thing a request asks to act as, and what the authorizer must allow.
type impersonation struct {
	resource    string // users, uids, groups, serviceaccounts, userextras
	subresource string // the extra's key
	namespace   string // a service account's
	name        string
}

// impersonations reads kube's Impersonate-* headers (which gRPC clients send as metadata of
// the same names). Groups, a UID or extras without a user are a bad request, as in kube.
func impersonations(h http.Header) ([]impersonation, error) {
	var out []impersonation
	name := h.Get(authenticationv1.ImpersonateUserHeader)
	if name != "" {
		if ns, sa, ok := splitServiceAccount(name); ok {
			out = append(out, impersonation{resource: "serviceaccounts", namespace: ns, name: sa})
		} else {
			out = append(out, impersonation{resource: "users", name: name})
		}
	}
	var groups []string
	var extra map[string][]string
	for _, g := range h.Values(authenticationv1.ImpersonateGroupHeader) {
		groups = append(groups, g)
		out = append(out, impersonation{resource: "groups", name: g})
	}
	uid := h.Get(authenticationv1.ImpersonateUIDHeader)
	if uid != "" {
		out = append(out, impersonation{resource: "uids", name: uid})
	}
	for header, values := range h {
		if !strings.HasPrefix(header, authenticationv1.ImpersonateUserExtraHeaderPrefix) {
			continue
		}
		key := strings.ToLower(header[len(authenticationv1.ImpersonateUserExtraHeaderPrefix):])
		if unescaped, err := url.PathUnescape(key); err == nil {
			key = unescaped
		}
		for _, v := range values {
			if extra == nil {
				extra = map[string][]string{}
			}
			extra[key] = append(extra[key], v)
			out = append(out, impersonation{resource: "userextras", subresource: key, name: v})
		}
	}
	if name == "" && (groups != nil || uid != "" || extra != nil) {
		// kube's message, which prints the user it would have made.
		return nil, fmt.Errorf("requested &user.DefaultInfo{Name:\"\", UID:%q, Groups:%#v, Extra:%#v} without impersonating a user name",
			uid, groups, extra)
	}
	return out, nil
}

// splitServiceAccount parses system:serviceaccount:<namespace>:<name>.
func splitServiceAccount(name string) (namespace, sa string, ok bool) {
	rest, ok := strings.CutPrefix(name, "system:serviceaccount:")
	if !ok {
		return "", "", false
	}
	namespace, sa, ok = strings.Cut(rest, ":")
	return namespace, sa, ok && namespace != "" && sa != "" && !strings.Contains(sa, ":")
}

// WithImpersonation lets a user act as another (kubectl --as) when the authorizer allows the
// "impersonate" verb on each user, group, UID, extra and service account asked for, as kube's
// filter does; the request then goes on as the impersonated user, and the headers go.
func WithImpersonation(next http.Handler, a authz.Authorizer, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wanted, err := impersonations(r.Header)
		if err != nil {
			WriteError(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error())
			return
		}
		if len(wanted) == 0 {
			next.ServeHTTP(w, r)
			return
		}
		requester, ok := user.From(r.Context())
		if !ok {
			WriteError(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "Internal error occurred: no user found for request")
			return
		}
		as := &user.User{}
		groupsGiven := len(r.Header.Values(authenticationv1.ImpersonateGroupHeader)) > 0
		for _, imp := range wanted {
			info := &requestinfo.RequestInfo{IsResourceRequest: true, Verb: "impersonate", APIGroup: "",
				Resource: imp.resource, Subresource: imp.subresource, Namespace: imp.namespace, Name: imp.name}
			switch imp.resource {
			case "serviceaccounts":
				as.Name = rbac.ServiceAccountUsername(imp.namespace, imp.name)
				if !groupsGiven {
					as.Groups = []string{"system:serviceaccounts", "system:serviceaccounts:" + imp.namespace}
				}
			case "users":
				as.Name = imp.name
			case "groups":
				as.Groups = append(as.Groups, imp.name)
			case "uids":
				as.UID = imp.name
			case "userextras":
				info.APIGroup = authenticationv1.SchemeGroupVersion.Group
				if as.Extra == nil {
					as.Extra = map[string][]string{}
				}
				as.Extra[imp.subresource] = append(as.Extra[imp.subresource], imp.name)
			}
			if allowed, reason := a.Authorize(requester, info); !allowed {
				log.Debug("impersonation forbidden", "user", requester.Name, "as", imp.name, "reason", reason)
				WriteStatus(w, forbiddenStatus(requester, info, reason))
				return
			}
		}
		// As kube: a non-anonymous user is in system:authenticated unless the groups asked for
		// already say authenticated or not.
		if as.Name != user.Anonymous && !hasAny(as.Groups, user.AllAuthenticated, user.AllUnauthenticated) {
			as.Groups = append(as.Groups, user.AllAuthenticated)
		}
		r.Header.Del(authenticationv1.ImpersonateUserHeader)
		r.Header.Del(authenticationv1.ImpersonateGroupHeader)
		r.Header.Del(authenticationv1.ImpersonateUIDHeader)
		for header := range r.Header {
			if strings.HasPrefix(header, authenticationv1.ImpersonateUserExtraHeaderPrefix) {
				r.Header.Del(header)
			}
		}
		audit.From(r.Context()).Impersonated(as)
		next.ServeHTTP(w, r.WithContext(user.WithUser(r.Context(), as)))
	})
}

func hasAny(list []string, want ...string) bool {
	for _, v := range list {
		for _, w := range want {
			if v == w {
				return true
			}
		}
	}
	return false
}
