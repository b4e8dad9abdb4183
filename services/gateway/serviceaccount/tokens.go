package serviceaccount

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"k8s.io/utils/lru"

	"github.com/apichain/apichain/pkg/authn"
	"github.com/apichain/apichain/pkg/user"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/google/uuid"
)

// The user a service-account token authenticates as, as kube names it.
const (
	usernamePrefix   = "system:serviceaccount:"
	allGroup         = "system:serviceaccounts"
	namespacePrefix  = "system:serviceaccounts:"
	extraPodName     = "authentication.kubernetes.io/pod-name"
	extraPodUID      = "authentication.kubernetes.io/pod-uid"
	warnOnlySeconds  = 60*60 + 7          // the kubelet's default, extended when asked
	extendedLifetime = 24 * 365 * 60 * 60 // a year
	minExpiration    = 10 * 60            // kube's minimum expirationSeconds
	maxExpiration    = int64(1) << 32     // kube's maximum expirationSeconds
	defaultLifetime  = int64(60 * 60)     // TokenRequest's default expirationSeconds
)

// privateClaims are kube's "kubernetes.io" claims.
type privateClaims struct {
	Kubernetes kubeClaims `json:"kubernetes.io"`
}

type kubeClaims struct {
	Namespace      string           `json:"namespace,omitempty"`
	ServiceAccount ref              `json:"serviceaccount"`
	Pod            *ref             `json:"pod,omitempty"`
	Secret         *ref             `json:"secret,omitempty"`
	WarnAfter      *jwt.NumericDate `json:"warnafter,omitempty"`
}

type ref struct {
	Name string `json:"name,omitempty"`
	UID  string `json:"uid,omitempty"`
}

// Tokens issues and checks the tokens.
type Tokens struct {
	opts    Options
	keys    *keySet
	signer  jose.Signer
	objects *Objects
	log     *slog.Logger
	now     func() time.Time
	// verified holds the claims of tokens whose signature checked out, by the token's
	// SHA-256, so a client's next request costs no signature check (an ES256 verification
	// is most of a token's cost). Expiry, audience and the bound objects are still checked
	// on every request, so a deleted service account stops its tokens at once; kube instead
	// caches whole answers for ten seconds.
	verified *lru.Cache
}

// verifiedClaims are a verified token's claims.
type verifiedClaims struct {
	public  jwt.Claims
	private privateClaims
}

// New loads the keys in opts (complete them with Or first); bound objects are looked up in
// objects.
func New(opts Options, objects *Objects, log *slog.Logger) (*Tokens, error) {
	keys, err := loadKeys(opts)
	if err != nil {
		return nil, err
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: keys.alg, Key: keys.signing}, nil)
	if err != nil {
		return nil, err
	}
	return &Tokens{opts: opts, keys: keys, signer: signer, objects: objects, log: log, now: time.Now,
		verified: lru.New(4096)}, nil
}

// APIAudiences are the audiences a token must carry to call the API.
func (t *Tokens) APIAudiences() []string { return t.opts.APIAudiences }

// bound is what a token is issued for.
type bound struct {
	namespace, name, uid string
	pod, secret          *ref
}

// issue signs a token for b valid for audiences from now for lifetime seconds; warnAfter
// (seconds, 0 for none) marks it stale earlier.
func (t *Tokens) issue(b bound, audiences []string, now time.Time, lifetime, warnAfter int64) (string, error) {
	public := jwt.Claims{
		Issuer:    t.opts.Issuers[0],
		Subject:   usernamePrefix + b.namespace + ":" + b.name,
		Audience:  jwt.Audience(audiences),
		IssuedAt:  jwt.NewNumericDate(now),
		NotBefore: jwt.NewNumericDate(now),
		Expiry:    jwt.NewNumericDate(now.Add(time.Duration(lifetime) * time.Second)),
		ID:        uuid.NewString(),
	}
	private := privateClaims{Kubernetes: kubeClaims{Namespace: b.namespace, ServiceAccount: ref{Name: b.name, UID: b.uid},
		Pod: b.pod, Secret: b.secret}}
	if warnAfter != 0 {
		private.Kubernetes.WarnAfter = jwt.NewNumericDate(now.Add(time.Duration(warnAfter) * time.Second))
	}
	return jwt.Signed(t.signer).Claims(public).Claims(private).Serialize()
}

// issuerOf reads the unverified iss claim, to tell this issuer's tokens from others' without
// the cost of a signature check (kube's hasCorrectIssuer).
func issuerOf(token string) string {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return ""
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var claims struct {
		Issuer string `json:"iss"`
	}
	if json.Unmarshal(payload, &claims) != nil {
		return ""
	}
	return claims.Issuer
}

// AuthenticateToken checks a token of one of the issuers: signature, expiry, audience, and
// that the service account (and the pod or secret it is bound to) still exists with the UID
// it was issued for. Tokens of other issuers are not this authenticator's.
func (t *Tokens) AuthenticateToken(ctx context.Context, token string) (*authn.Response, bool, error) {
	if iss := issuerOf(token); iss == "" || !slices.Contains(t.opts.Issuers, iss) {
		return nil, false, nil
	}
	claims, err := t.verify(token)
	if claims == nil {
		return nil, false, err
	}
	public, private := claims.public, claims.private
	now := t.now()
	switch err := public.ValidateWithLeeway(jwt.Expected{Time: now}, jwt.DefaultLeeway); {
	case err == nil:
	case errors.Is(err, jwt.ErrExpired):
		return nil, false, errors.New("service account token has expired")
	case errors.Is(err, jwt.ErrNotValidYet), errors.Is(err, jwt.ErrIssuedInTheFuture):
		return nil, false, errors.New("service account token is not valid yet")
	default:
		return nil, false, errors.New("service account token claims could not be validated")
	}
	target, ok := authn.AudiencesFrom(ctx)
	if !ok {
		target = t.opts.APIAudiences
	}
	auds := authn.Intersect([]string(public.Audience), target)
	if len(auds) == 0 {
		return nil, false, fmt.Errorf("token audiences %q is invalid for the target audiences %q", []string(public.Audience), target)
	}
	u, err := t.validate(ctx, now, private.Kubernetes)
	if err != nil {
		return nil, false, err
	}
	if public.ID != "" {
		u.Extra[authn.CredentialIDKey] = []string{"JTI=" + public.ID}
	}
	return &authn.Response{User: u, Audiences: auds}, true, nil
}

// verify checks the token's signature against the keys and returns its claims; nil claims and
// no error mean the token is no JWS of ours.
func (t *Tokens) verify(token string) (*verifiedClaims, error) {
	sum := sha256.Sum256([]byte(token))
	if c, ok := t.verified.Get(sum); ok {
		return c.(*verifiedClaims), nil
	}
	tok, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.RS256, jose.ES256, jose.ES384, jose.ES512})
	if err != nil || len(tok.Headers) != 1 {
		return nil, nil
	}
	c := &verifiedClaims{}
	var errs []error
	for _, k := range t.keys.public {
		if kid := tok.Headers[0].KeyID; kid != "" && kid != k.KeyID {
			continue
		}
		if err := tok.Claims(k.Key, &c.public, &c.private); err != nil {
			errs = append(errs, err)
			continue
		}
		t.verified.Add(sum, c)
		return c, nil
	}
	if len(errs) == 0 {
		return nil, errors.New("invalid signature: no key for the token's key ID")
	}
	return nil, errors.Join(errs...)
}

// validate checks that what the token is bound to still exists with the UIDs it names (kube's
// validator), and returns the token's user.
func (t *Tokens) validate(ctx context.Context, now time.Time, k kubeClaims) (*user.User, error) {
	// Deleted before now minus the leeway is gone; a deletion still within it is not yet.
	gone := func(o objectMeta) bool {
		dt := o.GetDeletionTimestamp()
		return dt != nil && dt.Time.Before(now.Add(-jwt.DefaultLeeway))
	}
	sa, err := t.objects.get(ctx, kindServiceAccount, k.Namespace, k.ServiceAccount.Name)
	if err != nil {
		return nil, err
	}
	if gone(sa) {
		return nil, fmt.Errorf("service account %s/%s has been deleted", k.Namespace, k.ServiceAccount.Name)
	}
	if string(sa.GetUID()) != k.ServiceAccount.UID {
		return nil, fmt.Errorf("service account UID (%s) does not match claim (%s)", sa.GetUID(), k.ServiceAccount.UID)
	}
	// A bound Secret or Pod must still be there with the UID the token names.
	for _, b := range []struct {
		kind kind
		what string
		ref  *ref
	}{{kindSecret, "secret", k.Secret}, {kindPod, "pod", k.Pod}} {
		if b.ref == nil {
			continue
		}
		o, err := t.objects.get(ctx, b.kind, k.Namespace, b.ref.Name)
		if err != nil || gone(o) {
			return nil, errors.New("service account token has been invalidated")
		}
		if string(o.GetUID()) != b.ref.UID {
			return nil, fmt.Errorf("%s UID (%s) does not match service account %s ref claim (%s)", b.what, o.GetUID(), b.what, b.ref.UID)
		}
	}
	u := &user.User{Name: usernamePrefix + k.Namespace + ":" + k.ServiceAccount.Name, UID: k.ServiceAccount.UID,
		Groups: []string{allGroup, namespacePrefix + k.Namespace}, Extra: map[string][]string{}}
	if k.Pod != nil {
		u.Extra[extraPodName] = []string{k.Pod.Name}
		u.Extra[extraPodUID] = []string{k.Pod.UID}
	}
	return u, nil
}
