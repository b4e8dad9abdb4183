package filters

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/apichain/apichain/pkg/requestinfo"
	"github.com/apichain/apichain/pkg/user"
	"github.com/apichain/apichain/services/gateway/audit"
	"github.com/apichain/apichain/services/gateway/authz"
)

// WithAuthorization rejects what the authorizer does not allow with kube's 403 Status.
func WithAuthorization(next http.Handler, a authz.Authorizer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, _ := user.From(r.Context())
		info, _ := requestinfo.From(r.Context())
		if u == nil || info == nil {
			WriteError(w, http.StatusForbidden, metav1.StatusReasonForbidden, "forbidden: no user or request info")
			return
		}
		ok, reason := a.Authorize(u, info)
		rec := audit.From(r.Context())
		rec.Annotate(audit.DecisionAnnotation, map[bool]string{true: "allow", false: "forbid"}[ok])
		rec.Annotate(audit.ReasonAnnotation, reason)
		if !ok {
			WriteStatus(w, forbiddenStatus(u, info, reason))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// forbiddenSanitizer keeps the message from looking like HTML, as kube's does.
var forbiddenSanitizer = strings.NewReplacer(`&`, "&amp;", `<`, "&lt;", `>`, "&gt;")

// forbiddenStatus is kube's 403 (responsewriters.Forbidden): the message of
// apierrors.NewForbidden for the request's group, resource and name, wrapping
// "User %q cannot <verb> ..." and the authorizer's reason.
func forbiddenStatus(u *user.User, info *requestinfo.RequestInfo, reason string) *metav1.Status {
	msg := forbiddenSanitizer.Replace(forbiddenMessage(u, info))
	if reason != "" {
		msg += ": " + reason
	}
	gr := schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}
	st := apierrors.NewForbidden(gr, info.Name, errors.New(msg)).ErrStatus
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	return &st
}

func forbiddenMessage(u *user.User, info *requestinfo.RequestInfo) string {
	if !info.IsResourceRequest {
		return fmt.Sprintf("User %q cannot %s path %q", u.Name, info.Verb, info.Path)
	}
	res := info.Resource
	if info.Subresource != "" {
		res += "/" + info.Subresource
	}
	if info.Namespace != "" {
		return fmt.Sprintf("User %q cannot %s resource %q in API group %q in the namespace %q", u.Name, info.Verb, res, info.APIGroup, info.Namespace)
	}
	return fmt.Sprintf("User %q cannot %s resource %q in API group %q at the cluster scope", u.Name, info.Verb, res, info.APIGroup)
}
