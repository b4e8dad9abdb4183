// Package reviews answers kube's review APIs (SelfSubjectReview, TokenReview and the access
// reviews) in the gateway, which holds the authenticator and the authorizer they ask.
package reviews

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/apichain/apichain/pkg/authn"
	"github.com/apichain/apichain/pkg/requestinfo"
	"github.com/apichain/apichain/pkg/user"
	"github.com/apichain/apichain/services/gateway/authz"
	"github.com/apichain/apichain/services/gateway/filters"
	"github.com/apichain/apichain/services/gateway/proxy"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

// The gateway owns authentication and authorization, so it answers the review APIs itself
// (core lists them in discovery): who am I, may I, is this token valid, may this user.
var reviewScheme, reviewCodecs = func() (*runtime.Scheme, serializer.CodecFactory) {
	s := runtime.NewScheme()
	_ = authenticationv1.AddToScheme(s)
	_ = authorizationv1.AddToScheme(s)
	return s, serializer.NewCodecFactory(s)
}()

type reviewKind struct {
	gvk schema.GroupVersionKind
	new func() runtime.Object
}

var reviews = map[schema.GroupVersionResource]reviewKind{
	authenticationv1.SchemeGroupVersion.WithResource("selfsubjectreviews"):       {authenticationv1.SchemeGroupVersion.WithKind("SelfSubjectReview"), func() runtime.Object { return &authenticationv1.SelfSubjectReview{} }},
	authenticationv1.SchemeGroupVersion.WithResource("tokenreviews"):             {authenticationv1.SchemeGroupVersion.WithKind("TokenReview"), func() runtime.Object { return &authenticationv1.TokenReview{} }},
	authorizationv1.SchemeGroupVersion.WithResource("selfsubjectaccessreviews"):  {authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectAccessReview"), func() runtime.Object { return &authorizationv1.SelfSubjectAccessReview{} }},
	authorizationv1.SchemeGroupVersion.WithResource("subjectaccessreviews"):      {authorizationv1.SchemeGroupVersion.WithKind("SubjectAccessReview"), func() runtime.Object { return &authorizationv1.SubjectAccessReview{} }},
	authorizationv1.SchemeGroupVersion.WithResource("localsubjectaccessreviews"): {authorizationv1.SchemeGroupVersion.WithKind("LocalSubjectAccessReview"), func() runtime.Object { return &authorizationv1.LocalSubjectAccessReview{} }},
	authorizationv1.SchemeGroupVersion.WithResource("selfsubjectrulesreviews"):   {authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectRulesReview"), func() runtime.Object { return &authorizationv1.SelfSubjectRulesReview{} }},
}

// Handler answers the reviews with the gateway's authentication and authorization.
type Handler struct {
	// Tokens are the bearer-token authenticators, asked for TokenReviews.
	Tokens authn.TokenAuthenticator
	// APIAudiences are what a TokenReview without spec.audiences checks a token for.
	APIAudiences []string
	Authorizer   authz.Union
}

// IsReview reports whether the request is a review the gateway answers.
func IsReview(info *requestinfo.RequestInfo) bool {
	if info == nil || !info.IsResourceRequest || info.Verb != "create" || info.Subresource != "" {
		return false
	}
	_, ok := reviews[schema.GroupVersionResource{Group: info.APIGroup, Version: info.APIVersion, Resource: info.Resource}]
	return ok
}

// ServeHTTP answers the review the request info names.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	info, _ := requestinfo.From(r.Context())
	kind := reviews[schema.GroupVersionResource{Group: info.APIGroup, Version: info.APIVersion, Resource: info.Resource}]
	obj := kind.new()
	if !ReadObject(w, r, kind.gvk, obj) {
		return
	}
	u, _ := user.From(r.Context())
	if err := h.answer(r, u, info, obj); err != nil {
		st := apierrors.NewBadRequest(err.Error()).ErrStatus
		if s, ok := err.(apierrors.APIStatus); ok {
			st = s.Status()
		}
		filters.WriteStatus(w, &st)
		return
	}
	WriteObject(w, r, kind.gvk.GroupVersion(), obj, http.StatusCreated)
}

// ReadObject decodes the request body (JSON, YAML or protobuf) into obj as gvk; on failure it
// has written the error and returns false.
func ReadObject(w http.ResponseWriter, r *http.Request, gvk schema.GroupVersionKind, obj runtime.Object) bool {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, proxy.MaxRequestBodyBytes))
	if err != nil {
		filters.WriteError(w, http.StatusRequestEntityTooLarge, metav1.StatusReasonRequestEntityTooLarge, "request entity too large")
		return false
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt == "" {
		mt = runtime.ContentTypeJSON
	}
	in, ok := runtime.SerializerInfoForMediaType(reviewCodecs.SupportedMediaTypes(), mt)
	if !ok {
		filters.WriteError(w, http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType, "unsupported media type "+mt)
		return false
	}
	if _, _, err := reviewCodecs.DecoderToVersion(in.Serializer, gvk.GroupVersion()).Decode(data, &gvk, obj); err != nil {
		filters.WriteStatus(w, &apierrors.NewBadRequest(err.Error()).ErrStatus)
		return false
	}
	return true
}

// WriteObject answers with obj in gv, as JSON or as protobuf when the client asks for it first.
func WriteObject(w http.ResponseWriter, r *http.Request, gv schema.GroupVersion, obj runtime.Object, code int) {
	out := pickOutput(r.Header.Get("Accept"))
	enc, _ := runtime.SerializerInfoForMediaType(reviewCodecs.SupportedMediaTypes(), out)
	body, err := runtime.Encode(reviewCodecs.EncoderForVersion(enc.Serializer, gv), obj)
	if err != nil {
		filters.WriteStatus(w, &apierrors.NewInternalError(err).ErrStatus)
		return
	}
	if out == runtime.ContentTypeJSON && filters.IsPretty(w) {
		var buf bytes.Buffer
		if json.Indent(&buf, body, "", "  ") == nil {
			body = buf.Bytes()
		}
	}
	w.Header().Set("Content-Type", out)
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

// pickOutput is protobuf when the client lists it first, JSON otherwise.
func pickOutput(accept string) string {
	for _, clause := range splitAccept(accept) {
		switch clause {
		case runtime.ContentTypeProtobuf:
			return runtime.ContentTypeProtobuf
		case runtime.ContentTypeJSON, "*/*", "application/*":
			return runtime.ContentTypeJSON
		}
	}
	return runtime.ContentTypeJSON
}

func splitAccept(accept string) []string {
	var out []string
	for _, c := range strings.Split(accept, ",") {
		if mt, _, err := mime.ParseMediaType(c); err == nil {
			out = append(out, mt)
		}
	}
	return out
}

func (h *Handler) answer(r *http.Request, u *user.User, info *requestinfo.RequestInfo, obj runtime.Object) error {
	switch o := obj.(type) {
	case *authenticationv1.SelfSubjectReview:
		o.Status.UserInfo = u.Info()
	case *authenticationv1.TokenReview:
		return h.reviewToken(r.Context(), o)
	case *authorizationv1.SelfSubjectAccessReview:
		o.Status = h.access(u, o.Spec.ResourceAttributes, o.Spec.NonResourceAttributes)
	case *authorizationv1.SubjectAccessReview:
		o.Status = h.access(subjectUser(o.Spec), o.Spec.ResourceAttributes, o.Spec.NonResourceAttributes)
	case *authorizationv1.LocalSubjectAccessReview:
		if o.Spec.ResourceAttributes != nil && o.Spec.ResourceAttributes.Namespace != info.Namespace {
			return apierrors.NewBadRequest("spec.resourceAttributes.namespace must match the request namespace")
		}
		o.Status = h.access(subjectUser(o.Spec), o.Spec.ResourceAttributes, o.Spec.NonResourceAttributes)
	case *authorizationv1.SelfSubjectRulesReview:
		o.Status = h.rules(u, o.Spec.Namespace)
	}
	return nil
}

// reviewToken answers as kube's TokenReview: the token is checked for spec.audiences (the API
// audiences when empty) and the status names the audiences it is valid for.
func (h *Handler) reviewToken(ctx context.Context, o *authenticationv1.TokenReview) error {
	if o.Spec.Token == "" {
		return apierrors.NewBadRequest("token is required for TokenReview in authentication")
	}
	auds := o.Spec.Audiences
	if len(auds) == 0 {
		auds = h.APIAudiences
	}
	if len(auds) > 0 {
		ctx = authn.WithAudiences(ctx, auds)
	}
	o.Status = authenticationv1.TokenReviewStatus{}
	resp, ok, err := h.Tokens.AuthenticateToken(ctx, o.Spec.Token)
	if err != nil {
		o.Status.Error = err.Error()
	}
	if !ok {
		return nil
	}
	o.Status.Authenticated = true
	o.Status.User = authn.WithAuthenticatedGroup(resp.User).Info()
	o.Status.Audiences = resp.Audiences
	return nil
}

func (h *Handler) access(u *user.User, ra *authorizationv1.ResourceAttributes, nra *authorizationv1.NonResourceAttributes) authorizationv1.SubjectAccessReviewStatus {
	info := &requestinfo.RequestInfo{}
	switch {
	case ra != nil:
		info.IsResourceRequest = true
		info.Verb, info.APIGroup, info.APIVersion, info.Resource = ra.Verb, ra.Group, ra.Version, ra.Resource
		info.Subresource, info.Namespace, info.Name = ra.Subresource, ra.Namespace, ra.Name
	case nra != nil:
		info.Verb, info.Path = nra.Verb, nra.Path
	}
	allowed, reason := h.Authorizer.Authorize(u, info)
	return authorizationv1.SubjectAccessReviewStatus{Allowed: allowed, Denied: !allowed, Reason: reason}
}

func subjectUser(spec authorizationv1.SubjectAccessReviewSpec) *user.User {
	u := &user.User{Name: spec.User, UID: spec.UID, Groups: spec.Groups}
	for k, v := range spec.Extra {
		if u.Extra == nil {
			u.Extra = map[string][]string{}
		}
		u.Extra[k] = v
	}
	return u
}

// rules is kube's SelfSubjectRulesReview status: resource and non-resource rules in the
// order the authorizers give them, and the error of rules that could not be resolved.
func (h *Handler) rules(u *user.User, namespace string) authorizationv1.SubjectRulesReviewStatus {
	rules, err := h.Authorizer.RulesFor(u, namespace)
	st := authorizationv1.SubjectRulesReviewStatus{ResourceRules: []authorizationv1.ResourceRule{}, NonResourceRules: []authorizationv1.NonResourceRule{}}
	for _, r := range rules {
		if len(r.Resources) > 0 {
			st.ResourceRules = append(st.ResourceRules, authorizationv1.ResourceRule{Verbs: r.Verbs, APIGroups: r.APIGroups,
				Resources: r.Resources, ResourceNames: r.ResourceNames})
		}
		if len(r.NonResourceURLs) > 0 {
			st.NonResourceRules = append(st.NonResourceRules, authorizationv1.NonResourceRule{Verbs: r.Verbs, NonResourceURLs: r.NonResourceURLs})
		}
	}
	if err != nil {
		st.EvaluationError = err.Error()
	}
	return st
}
