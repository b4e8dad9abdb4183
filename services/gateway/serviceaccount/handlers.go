package serviceaccount

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apichain/apichain/pkg/requestinfo"
	"github.com/apichain/apichain/services/gateway/filters"
	"github.com/apichain/apichain/services/gateway/reviews"
	jose "github.com/go-jose/go-jose/v4"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var tokenRequestGVK = authenticationv1.SchemeGroupVersion.WithKind("TokenRequest")

// IsTokenRequest reports whether the request is for serviceaccounts/<name>/token, which the
// gateway answers (core lists the subresource in discovery).
func IsTokenRequest(info *requestinfo.RequestInfo) bool {
	return info != nil && info.IsResourceRequest && info.APIGroup == "" && info.APIVersion == "v1" &&
		info.Resource == "serviceaccounts" && info.Subresource == "token" && info.Name != ""
}

func writeErr(w http.ResponseWriter, err error) {
	if s, ok := err.(apierrors.APIStatus); ok {
		st := s.Status()
		filters.WriteStatus(w, &st)
		return
	}
	filters.WriteStatus(w, &apierrors.NewInternalError(err).ErrStatus)
}

// ServeTokenRequest issues a token for the service account, as kube's TokenRequest does:
// the service account must exist (and match metadata.uid if given), a bound Pod must run as
// it, a bound object's UID must match, and the lifetime is between ten minutes and 2^32 s.
func (t *Tokens) ServeTokenRequest(w http.ResponseWriter, r *http.Request) {
	info, _ := requestinfo.From(r.Context())
	if info.Verb != "create" {
		writeErr(w, apierrors.NewMethodNotSupported(schema.GroupResource{Resource: "serviceaccounts/token"}, info.Verb))
		return
	}
	req := &authenticationv1.TokenRequest{}
	if !reviews.ReadObject(w, r, tokenRequestGVK, req) {
		return
	}
	out, warning, err := t.tokenRequest(r, info.Namespace, info.Name, req)
	if err != nil {
		writeErr(w, err)
		return
	}
	if warning != "" {
		w.Header().Add("Warning", "299 - "+strconv.Quote(warning))
	}
	reviews.WriteObject(w, r, tokenRequestGVK.GroupVersion(), out, http.StatusCreated)
}

func invalid(name string, errs ...*field.Error) error {
	return apierrors.NewInvalid(tokenRequestGVK.GroupKind(), name, errs)
}

func (t *Tokens) tokenRequest(r *http.Request, namespace, name string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, string, error) {
	ctx := r.Context()
	if req.Name != "" && req.Name != name {
		return nil, "", invalid(name, field.Invalid(field.NewPath("metadata", "name"), req.Name, "must match the service account name if specified"))
	}
	if req.Namespace != "" && req.Namespace != namespace {
		return nil, "", invalid(name, field.Invalid(field.NewPath("metadata", "namespace"), req.Namespace, "must match the service account namespace if specified"))
	}
	sa := &corev1.ServiceAccount{}
	if err := t.objects.read(ctx, "serviceaccounts", namespace, name, sa); err != nil {
		return nil, "", err
	}
	if req.UID != "" && req.UID != sa.UID {
		return nil, "", apierrors.NewConflict(tokenRequestGVK.GroupVersion().WithResource("TokenRequest").GroupResource(), name,
			fmt.Errorf("the UID in the token request (%s) does not match the UID of the service account (%s)", req.UID, sa.UID))
	}
	if len(req.Spec.Audiences) == 0 {
		req.Spec.Audiences = t.opts.APIAudiences
	}
	if req.Spec.ExpirationSeconds == nil {
		req.Spec.ExpirationSeconds = new(defaultLifetime)
	}
	req.Name, req.Namespace, req.UID = sa.Name, sa.Namespace, sa.UID
	now := t.now()
	req.CreationTimestamp = metav1.NewTime(now)
	req.Status = authenticationv1.TokenRequestStatus{}
	specPath := field.NewPath("spec")
	switch exp := *req.Spec.ExpirationSeconds; {
	case exp < minExpiration:
		return nil, "", invalid("", field.Invalid(specPath.Child("expirationSeconds"), exp, "may not specify a duration less than 10 minutes"))
	case exp > maxExpiration:
		return nil, "", invalid("", field.Invalid(specPath.Child("expirationSeconds"), exp, "may not specify a duration larger than 2^32 seconds"))
	}

	b := bound{namespace: sa.Namespace, name: sa.Name, uid: string(sa.UID)}
	if br := req.Spec.BoundObjectRef; br != nil {
		var uid types.UID
		gvk := schema.FromAPIVersionAndKind(br.APIVersion, br.Kind)
		switch {
		case gvk.Group == "" && gvk.Kind == "Pod":
			pod := &corev1.Pod{}
			if err := t.objects.read(ctx, "pods", namespace, br.Name, pod); err != nil {
				return nil, "", err
			}
			if pod.Spec.ServiceAccountName != name {
				return nil, "", apierrors.NewBadRequest(fmt.Sprintf("cannot bind token for serviceaccount %q to pod running with different serviceaccount name.", name))
			}
			uid, b.pod = pod.UID, &ref{Name: pod.Name, UID: string(pod.UID)}
		case gvk.Group == "" && gvk.Kind == "Secret":
			secret := &metav1.PartialObjectMetadata{}
			if err := t.objects.read(ctx, "secrets", namespace, br.Name, secret); err != nil {
				return nil, "", err
			}
			uid, b.secret = secret.UID, &ref{Name: secret.Name, UID: string(secret.UID)}
		default:
			return nil, "", apierrors.NewBadRequest(fmt.Sprintf("cannot bind token to object of type %s", gvk.String()))
		}
		if br.UID != "" && br.UID != uid {
			return nil, "", apierrors.NewConflict(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, br.Name,
				fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", br.UID))
		}
	}

	warning := ""
	if limit := int64(t.opts.MaxExpiration / time.Second); limit > 0 && *req.Spec.ExpirationSeconds > limit {
		warning = fmt.Sprintf("requested expiration of %d seconds shortened to %d seconds", *req.Spec.ExpirationSeconds, limit)
		req.Spec.ExpirationSeconds = new(limit)
	}
	// A pod-bound token asked for the kubelet's default lifetime is extended and only flagged
	// as stale after it (kube's safe rollout of bound tokens).
	lifetime, warnAfter := *req.Spec.ExpirationSeconds, int64(0)
	if t.opts.ExtendExpiration && b.pod != nil && lifetime == warnOnlySeconds && subset(req.Spec.Audiences, t.opts.APIAudiences) {
		warnAfter, lifetime = lifetime, extendedLifetime
	}
	token, err := t.issue(b, req.Spec.Audiences, now, lifetime, warnAfter)
	if err != nil {
		return nil, "", apierrors.NewInternalError(fmt.Errorf("failed to generate token: %w", err))
	}
	req.Status = authenticationv1.TokenRequestStatus{Token: token,
		ExpirationTimestamp: metav1.NewTime(now.Add(time.Duration(*req.Spec.ExpirationSeconds) * time.Second))}
	return req, warning, nil
}

func subset(a, of []string) bool {
	for _, x := range a {
		if !slices.Contains(of, x) {
			return false
		}
	}
	return true
}

// openIDConfiguration is kube's OIDC discovery document.
type openIDConfiguration struct {
	Issuer        string   `json:"issuer"`
	JWKSURI       string   `json:"jwks_uri"`
	ResponseTypes []string `json:"response_types_supported"`
	SubjectTypes  []string `json:"subject_types_supported"`
	SigningAlgs   []string `json:"id_token_signing_alg_values_supported"`
}

// Discovery serves /.well-known/openid-configuration and /openid/v1/jwks, as kube does when
// the issuer is an https URL (the bootstrap policy lets service accounts read them). The
// documents name --service-account-jwks-uri, or the JWKS at externalURL (the server's
// external address, as in kube). ok is false when the issuer is not an https URL.
func (t *Tokens) Discovery(externalURL string) (config, jwks http.HandlerFunc, ok bool) {
	if u, err := url.Parse(t.opts.Issuers[0]); err != nil || u.Scheme != "https" {
		return nil, nil, false
	}
	jwksURI := t.opts.JWKSURI
	if jwksURI == "" {
		jwksURI = strings.TrimSuffix(externalURL, "/") + "/openid/v1/jwks"
	}
	algs := []string{}
	for _, k := range t.keys.public {
		if !slices.Contains(algs, k.Algorithm) {
			algs = append(algs, k.Algorithm)
		}
	}
	configJSON, _ := json.Marshal(openIDConfiguration{Issuer: t.opts.Issuers[0], JWKSURI: jwksURI,
		ResponseTypes: []string{"id_token"}, SubjectTypes: []string{"public"}, SigningAlgs: algs})
	keysJSON, _ := json.Marshal(jose.JSONWebKeySet{Keys: t.keys.public})
	serve := func(contentType string, body []byte) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", contentType)
			w.Header().Set("Cache-Control", "public, max-age=3600")
			_, _ = w.Write(body)
		}
	}
	return serve("application/json", configJSON), serve("application/jwk-set+json", keysJSON), true
}
