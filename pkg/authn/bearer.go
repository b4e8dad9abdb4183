package authn

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/apichain/apichain/pkg/user"
)

// Response is a token authenticator's answer: the user, and the audiences the token is valid
// for among those asked for.
type Response struct {
	User      *user.User
	Audiences []string
}

// TokenAuthenticator checks a bearer token. ok=false with no error means "not a token of
// mine"; an error means it is mine and bad (expired, revoked, wrong audience).
type TokenAuthenticator interface {
	AuthenticateToken(ctx context.Context, token string) (*Response, bool, error)
}

type audiencesKey struct{}

// WithAudiences asks the token authenticators for a token valid for one of auds (kube's
// authenticator.WithAudiences): the API server's own audiences for a request, a
// TokenReview's spec.audiences for a review.
func WithAudiences(ctx context.Context, auds []string) context.Context {
	return context.WithValue(ctx, audiencesKey{}, auds)
}

// AudiencesFrom returns the audiences asked for.
func AudiencesFrom(ctx context.Context) ([]string, bool) {
	auds, ok := ctx.Value(audiencesKey{}).([]string)
	return auds, ok
}

// Intersect is the audiences in both a and b, in a's order.
func Intersect(a, b []string) []string {
	var out []string
	for _, x := range a {
		if slices.Contains(b, x) && !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// Bearer reads the Authorization header's bearer token and asks each token authenticator in
// turn, as kube's bearertoken and union authenticators do. Requests are checked for the API
// server's audiences.
type Bearer struct {
	// APIAudiences are the audiences a token must be valid for to call this API (kube's
	// --api-audiences, the service-account issuer by default).
	APIAudiences []string
	Tokens       []TokenAuthenticator
}

// NewBearer asks tokens in order, for apiAudiences.
func NewBearer(apiAudiences []string, tokens ...TokenAuthenticator) *Bearer {
	return &Bearer{APIAudiences: apiAudiences, Tokens: tokens}
}

// BearerToken is the header's token, read as kube's bearertoken authenticator reads it:
// "Bearer" (any case), one space, the token up to the next space. An empty token (as in
// "Bearer  x") is no credential at all.
func BearerToken(r *http.Request) string {
	parts := strings.SplitN(strings.TrimSpace(r.Header.Get("Authorization")), " ", 3)
	if len(parts) < 2 || strings.ToLower(parts[0]) != "bearer" {
		return ""
	}
	return parts[1]
}

// errInvalidToken is kube's answer for a bearer token no authenticator knows.
var errInvalidToken = errors.New("invalid bearer token")

// AuthenticateRequest checks the request's bearer token for the API audiences.
func (b *Bearer) AuthenticateRequest(r *http.Request) (*user.User, bool, error) {
	token := BearerToken(r)
	if token == "" {
		return nil, false, nil
	}
	ctx := r.Context()
	if _, ok := AudiencesFrom(ctx); !ok && len(b.APIAudiences) > 0 {
		ctx = WithAudiences(ctx, b.APIAudiences)
	}
	resp, ok, err := b.AuthenticateToken(ctx, token)
	if !ok {
		return nil, false, err
	}
	return resp.User, true, nil
}

// AuthenticateToken asks each token authenticator; the first that accepts the token decides.
// Otherwise the error is kube's: "invalid bearer token", followed by the authenticators'
// errors when there are any ("[invalid bearer token, service account token has expired]").
func (b *Bearer) AuthenticateToken(ctx context.Context, token string) (*Response, bool, error) {
	var errs []error
	for _, t := range b.Tokens {
		resp, ok, err := t.AuthenticateToken(ctx, token)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			return resp, true, nil
		}
	}
	if len(errs) == 0 {
		return nil, false, errInvalidToken
	}
	// kube's message lists the bearer authenticator's own "invalid bearer token" first.
	msgs := []string{errInvalidToken.Error()}
	for _, e := range errs {
		msgs = append(msgs, e.Error())
	}
	return nil, false, fmt.Errorf("[%s]", strings.Join(msgs, ", "))
}

// AudienceAgnostic wraps an authenticator whose tokens carry no audience (the static token
// file) as kube does: such a token is valid for the API server's own audiences only.
func AudienceAgnostic(apiAudiences []string, t TokenAuthenticator) TokenAuthenticator {
	return audienceAgnostic{implicit: apiAudiences, delegate: t}
}

type audienceAgnostic struct {
	implicit []string
	delegate TokenAuthenticator
}

func (a audienceAgnostic) AuthenticateToken(ctx context.Context, token string) (*Response, bool, error) {
	target, ok := AudiencesFrom(ctx)
	if !ok || len(a.implicit) == 0 {
		return a.delegate.AuthenticateToken(ctx, token)
	}
	auds := Intersect(a.implicit, target)
	if len(auds) == 0 {
		return nil, false, nil
	}
	resp, ok, err := a.delegate.AuthenticateToken(ctx, token)
	if err != nil || !ok {
		return nil, false, err
	}
	return &Response{User: resp.User, Audiences: auds}, true, nil
}

// StaticToken authenticates one secret token as one user (the gateway's loopback client).
type StaticToken struct {
	Token string
	User  *user.User
}

// AuthenticateToken implements TokenAuthenticator.
func (s StaticToken) AuthenticateToken(ctx context.Context, token string) (*Response, bool, error) {
	if subtle.ConstantTimeCompare([]byte(token), []byte(s.Token)) != 1 {
		return nil, false, nil
	}
	auds, _ := AudiencesFrom(ctx)
	return &Response{User: s.User, Audiences: auds}, true, nil
}
