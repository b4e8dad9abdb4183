package filters

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/apichain/apichain/pkg/requestinfo"
	"github.com/apichain/apichain/pkg/rpcstatus"
	"github.com/apichain/apichain/pkg/user"
	"github.com/apichain/apichain/services/gateway/audit"
	"github.com/apichain/apichain/services/gateway/authz"
)

// WithAuthorization rejects what the authorizer does not allow with kube's 403 Status. A gRPC
// call passes: its request is in its message, which the gRPC server's GRPCAuthorization
// interceptor authorizes.
func WithAuthorization(next http.Handler, a authz.Authorizer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if IsGRPC(r) {
			next.ServeHTTP(w, r)
			return
		}
		if st := authorize(r.Context(), a); st != nil {
			WriteStatus(w, st)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// authorize asks the authorizer about the request in ctx and records its decision in the
// audit event; the answer is kube's 403 Status when it is not allowed.
func authorize(ctx context.Context, a authz.Authorizer) *metav1.Status {
	u, _ := user.From(ctx)
	info, _ := requestinfo.From(ctx)
	if u == nil || info == nil {
		return rpcstatus.NewStatus(http.StatusForbidden, metav1.StatusReasonForbidden, "forbidden: no user or request info")
	}
	ok, reason := a.Authorize(u, info)
	rec := audit.From(ctx)
	rec.Annotate(audit.DecisionAnnotation, map[bool]string{true: "allow", false: "forbid"}[ok])
	rec.Annotate(audit.ReasonAnnotation, reason)
	if !ok {
		return forbiddenStatus(u, info, reason)
	}
	return nil
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
