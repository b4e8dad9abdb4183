package authn

import (
	"context"
	"crypto/sha256"
	"errors"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authenticationv1client "k8s.io/client-go/kubernetes/typed/authentication/v1"

	"github.com/apichain/apichain/pkg/user"
)

// TokenReview authenticates bearer tokens by asking the API server (kube's delegated
// authentication, as kube-controller-manager and aggregated API servers do it). Each answer
// is kept for TTL under the token's SHA-256, so a scraper's every request does not make a
// review.
type TokenReview struct {
	reviews authenticationv1client.TokenReviewInterface
	ttl     time.Duration
	now     func() time.Time
	mu      sync.Mutex
	cache   map[[sha256.Size]byte]reviewed
}

type reviewed struct {
	resp    *Response
	ok      bool
	err     error
	expires time.Time
}

// NewTokenReview reviews tokens with reviews, keeping answers for ttl (kube's default 10 s).
func NewTokenReview(reviews authenticationv1client.TokenReviewInterface, ttl time.Duration) *TokenReview {
	return &TokenReview{reviews: reviews, ttl: ttl, now: time.Now, cache: map[[sha256.Size]byte]reviewed{}}
}

// maxReviewed bounds the kept answers; past it they are forgotten at once.
const maxReviewed = 4096

// AuthenticateToken implements TokenAuthenticator. A review that could not be made is not
// kept.
func (t *TokenReview) AuthenticateToken(ctx context.Context, token string) (*Response, bool, error) {
	key := sha256.Sum256([]byte(token))
	t.mu.Lock()
	if r, hit := t.cache[key]; hit && t.now().Before(r.expires) {
		t.mu.Unlock()
		return r.resp, r.ok, r.err
	}
	t.mu.Unlock()

	review, err := t.reviews.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return nil, false, err
	}
	r := reviewed{expires: t.now().Add(t.ttl)}
	switch st := review.Status; {
	case st.Authenticated:
		extra := map[string][]string{}
		for k, v := range st.User.Extra {
			extra[k] = v
		}
		r.resp, r.ok = &Response{User: &user.User{Name: st.User.Username, UID: st.User.UID, Groups: st.User.Groups, Extra: extra},
			Audiences: st.Audiences}, true
	case st.Error != "":
		r.err = errors.New(st.Error)
	}
	t.mu.Lock()
	if len(t.cache) >= maxReviewed {
		clear(t.cache)
	}
	t.cache[key] = r
	t.mu.Unlock()
	return r.resp, r.ok, r.err
}
