package filters

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"k8s.io/utils/lru"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/apichain/apichain/pkg/requestinfo"
	"github.com/apichain/apichain/pkg/user"
	"github.com/apichain/apichain/services/gateway/audit"
	"github.com/apichain/apichain/services/gateway/authz"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// wantedUser is who the Impersonate-* headers (or gRPC metadata of the same names) ask to
// act as.
type wantedUser struct {
	name, uid string
	groups    []string
	extra     map[string][]string
}

func (w *wantedUser) onlyName() bool { return w.uid == "" && len(w.groups) == 0 && len(w.extra) == 0 }

// parseImpersonation reads the headers; nil when there are none. Groups, a UID or extras
// without a user are a bad request, as in kube.
func parseImpersonation(h http.Header) (*wantedUser, error) {
	w := &wantedUser{name: h.Get(authenticationv1.ImpersonateUserHeader), uid: h.Get(authenticationv1.ImpersonateUIDHeader),
		groups: h.Values(authenticationv1.ImpersonateGroupHeader)}
	hasExtra := false
	for header, values := range h {
		if !strings.HasPrefix(header, authenticationv1.ImpersonateUserExtraHeaderPrefix) {
			continue
		}
		hasExtra = true
		key := strings.ToLower(header[len(authenticationv1.ImpersonateUserExtraHeaderPrefix):])
		if unescaped, err := url.PathUnescape(key); err == nil {
			key = unescaped
		}
		for _, v := range values {
			if w.extra == nil {
				w.extra = map[string][]string{}
			}
			w.extra[key] = append(w.extra[key], v)
		}
	}
	if w.name == "" && (len(w.groups) > 0 || w.uid != "" || hasExtra) {
		// kube's message, which prints the user it would have made.
		return nil, fmt.Errorf("requested &user.DefaultInfo{Name:\"\", UID:%q, Groups:%#v, Extra:%#v} without impersonating a user name",
			w.uid, w.groups, w.extra)
	}
	if w.name == "" {
		return nil, nil
	}
	return w, nil
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

// splitNode parses system:node:<name>.
func splitNode(name string) (string, bool) {
	node, ok := strings.CutPrefix(name, "system:node:")
	return node, ok && len(validation.IsDNS1123Subdomain(node)) == 0
}

// impersonationMode is one of kube 1.37's ways to be allowed to impersonate (KEP-5284
// constrained impersonation, then legacy). A constrained mode asks for
// "impersonate-on:<mode>:<verb>" on the request itself and "impersonate:<mode>" on who is
// impersonated; legacy asks for "impersonate" on who is impersonated.
type impersonationMode struct {
	name    string // "" for legacy
	applies func(w *wantedUser) bool
}

var impersonationModes = []impersonationMode{
	// kube's associated-node mode (a service account acting as the node its pod runs on)
	// needs node claims in service-account tokens, which apichain does not issue yet.
	{"arbitrary-node", func(w *wantedUser) bool { _, ok := splitNode(w.name); return ok && w.onlyName() }},
	{"serviceaccount", func(w *wantedUser) bool { _, _, ok := splitServiceAccount(w.name); return ok && w.onlyName() }},
	{"user-info", func(w *wantedUser) bool {
		_, node := splitNode(w.name)
		_, _, sa := splitServiceAccount(w.name)
		return !node && !sa
	}},
	{"", func(*wantedUser) bool { return true }},
}

// impersonator checks one mode for one request.
type impersonator struct {
	a         authz.Authorizer
	requester *user.User
}

func (im impersonator) check(info *requestinfo.RequestInfo, reason string) *metav1.Status {
	if reason != "" {
		return forbiddenStatus(im.requester, info, reason)
	}
	if ok, why := im.a.Authorize(im.requester, info); !ok {
		return forbiddenStatus(im.requester, info, why)
	}
	return nil
}

// allow returns the user the request acts as under mode m and the constraint that allowed it
// (the mode's verb, "" for legacy), or the first refusal.
func (im impersonator) allow(m impersonationMode, w *wantedUser, req *requestinfo.RequestInfo) (*user.User, string, *metav1.Status) {
	constrained := m.name != ""
	verb, group := "impersonate", ""
	if constrained {
		on := *req
		on.Verb = "impersonate-on:" + m.name + ":" + req.Verb
		if st := im.check(&on, ""); st != nil {
			return nil, "", st
		}
		verb, group = "impersonate:"+m.name, authenticationv1.GroupName
	}
	attrs := func(g, resource, name string) *requestinfo.RequestInfo {
		return &requestinfo.RequestInfo{IsResourceRequest: true, Verb: verb, APIGroup: g, APIVersion: "v1", Resource: resource, Name: name}
	}
	as := &user.User{Name: w.name, UID: w.uid, Groups: append([]string(nil), w.groups...), Extra: w.extra}

	target := attrs(group, "users", w.name)
	if node, ok := splitNode(w.name); ok && constrained {
		target.Resource, target.Name = "nodes", node
		if len(w.groups) > 0 {
			return nil, "", im.check(target, fmt.Sprintf("when impersonating a node, cannot impersonate groups %q", w.groups))
		}
		as.Groups = []string{"system:nodes"}
	}
	if ns, sa, ok := splitServiceAccount(w.name); ok {
		target.Resource, target.Namespace, target.Name = "serviceaccounts", ns, sa
		if constrained && len(w.groups) > 0 {
			return nil, "", im.check(target, fmt.Sprintf("when impersonating a service account, cannot impersonate groups %q", w.groups))
		}
		if len(w.groups) == 0 {
			as.Groups = []string{"system:serviceaccounts", "system:serviceaccounts:" + ns}
		}
	}
	if st := im.check(target, ""); st != nil {
		return nil, "", st
	}
	if w.uid != "" {
		if st := im.check(attrs(authenticationv1.GroupName, "uids", w.uid), ""); st != nil {
			return nil, "", st
		}
	}
	if len(w.groups) > 0 {
		g := attrs(group, "groups", "")
		if constrained && slices.Contains(w.groups, "") {
			return nil, "", im.check(g, "impersonating the empty string group is not allowed")
		}
		if constrained && slices.Contains(w.groups, user.SystemPrivilegedGroup) {
			g.Name = user.SystemPrivilegedGroup
			return nil, "", im.check(g, "impersonating the system:masters group is not allowed")
		}
		all := *g
		all.Name = "*"
		if !constrained || len(w.groups) < 4 || im.check(&all, "") != nil {
			for _, name := range w.groups {
				g.Name = name
				if st := im.check(g, ""); st != nil {
					return nil, "", st
				}
			}
		}
	}
	for key, values := range w.extra {
		e := attrs(authenticationv1.GroupName, "userextras", "")
		e.Subresource = key
		if constrained {
			if why := invalidExtra(key, values); why != "" {
				return nil, "", im.check(e, why)
			}
		}
		for _, v := range values {
			e.Name = v
			if st := im.check(e, ""); st != nil {
				return nil, "", st
			}
		}
	}
	if as.Name == user.Anonymous {
		if !slices.Contains(as.Groups, user.AllUnauthenticated) {
			as.Groups = append(as.Groups, user.AllUnauthenticated)
		}
	} else if !hasAny(as.Groups, user.AllAuthenticated, user.AllUnauthenticated) {
		as.Groups = append(as.Groups, user.AllAuthenticated)
	}
	if !constrained {
		verb = ""
	}
	return as, verb, nil
}

// invalidExtra is constrained impersonation's refusal of an extra, or "".
func invalidExtra(key string, values []string) string {
	switch {
	case key == "":
		return "impersonating the empty string key in extra is not allowed"
	case len(validation.IsDomainPrefixedPath(field.NewPath("extra", "key"), key)) > 0:
		return "impersonating an invalid key in extra is not allowed: " + validation.IsDomainPrefixedPath(field.NewPath("extra", "key"), key).ToAggregate().Error()
	case key != strings.ToLower(key):
		return fmt.Sprintf("impersonating a non-lowercase key in extra is not allowed: %q", key)
	case len(values) == 0:
		return "impersonating empty values in extra is not allowed"
	case slices.Contains(values, ""):
		return "impersonating the empty string value in extra is not allowed"
	}
	return ""
}

// WithImpersonation lets a user act as another (kubectl --as) as kube 1.37 does: each
// impersonation mode that fits who is asked for is tried in kube's order (arbitrary node,
// service account, user info, then legacy "impersonate", but first the one that last worked
// for the requester); the first that allows it wins, and when none does the first refusal is
// the answer. kube's short-lived caches of successful checks are not kept: every request is
// authorized afresh, so a revoked permission stops at once. The request then goes on as the
// impersonated user, without the headers.
func WithImpersonation(next http.Handler, a authz.Authorizer, log *slog.Logger) http.Handler {
	lastMode := lru.New(10_000) // requester name -> index of the mode that last allowed them
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wanted, err := parseImpersonation(r.Header)
		if err != nil {
			WriteError(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error())
			return
		}
		if wanted == nil {
			next.ServeHTTP(w, r)
			return
		}
		requester, ok := user.From(r.Context())
		info, _ := requestinfo.From(r.Context())
		if !ok || info == nil {
			WriteError(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "Internal error occurred: no user found for request")
			return
		}
		im := impersonator{a: a, requester: requester}
		// The mode that last worked for this requester is tried first, as kube does, so its
		// refusal is the answer when nothing allows the request.
		order := make([]int, 0, len(impersonationModes))
		last, cached := lastMode.Get(requester.Name)
		if cached {
			order = append(order, last.(int))
		}
		for i := range impersonationModes {
			if !cached || i != last.(int) {
				order = append(order, i)
			}
		}
		var first *metav1.Status
		for _, i := range order {
			m := impersonationModes[i]
			if !m.applies(wanted) {
				continue
			}
			as, constraint, st := im.allow(m, wanted, info)
			if st != nil {
				if first == nil {
					first = st
				}
				continue
			}
			lastMode.Add(requester.Name, i)
			r.Header.Del(authenticationv1.ImpersonateUserHeader)
			r.Header.Del(authenticationv1.ImpersonateGroupHeader)
			r.Header.Del(authenticationv1.ImpersonateUIDHeader)
			for header := range r.Header {
				if strings.HasPrefix(header, authenticationv1.ImpersonateUserExtraHeaderPrefix) {
					r.Header.Del(header)
				}
			}
			audit.From(r.Context()).Impersonated(as, constraint)
			next.ServeHTTP(w, r.WithContext(user.WithUser(r.Context(), as)))
			return
		}
		log.Debug("impersonation forbidden", "user", requester.Name, "as", wanted.name, "reason", first.Message)
		WriteStatus(w, first)
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
