package delegated

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/apichain/apichain/pkg/authn"
	"github.com/apichain/apichain/pkg/user"
)

// fakeAPIServer answers TokenReviews (token "good" is prometheus in system:monitoring, "bad"
// is an error) and SubjectAccessReviews (system:monitoring may get /metrics), counting them.
type fakeAPIServer struct {
	tokenReviews, accessReviews atomic.Int32
}

func (f *fakeAPIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/apis/authentication.k8s.io/v1/tokenreviews":
		f.tokenReviews.Add(1)
		var tr authenticationv1.TokenReview
		_ = json.NewDecoder(r.Body).Decode(&tr)
		switch tr.Spec.Token {
		case "good":
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true,
				User: authenticationv1.UserInfo{Username: "prometheus", Groups: []string{"system:monitoring"}}}
		case "bad":
			tr.Status.Error = "token expired"
		}
		_ = json.NewEncoder(w).Encode(tr)
	case "/apis/authorization.k8s.io/v1/subjectaccessreviews":
		f.accessReviews.Add(1)
		var sar authorizationv1.SubjectAccessReview
		_ = json.NewDecoder(r.Body).Decode(&sar)
		for _, g := range sar.Spec.Groups {
			if g == "system:monitoring" && sar.Spec.NonResourceAttributes.Path == "/metrics" && sar.Spec.NonResourceAttributes.Verb == "get" {
				sar.Status.Allowed, sar.Status.Reason = true, "RBAC: allowed by ClusterRoleBinding"
			}
		}
		_ = json.NewEncoder(w).Encode(sar)
	default:
		http.NotFound(w, r)
	}
}

// startFake serves a fakeAPIServer and a clientset of it, speaking JSON.
func startFake(t *testing.T) (*fakeAPIServer, *kubernetes.Clientset) {
	fake := &fakeAPIServer{}
	api := httptest.NewServer(fake)
	t.Cleanup(api.Close)
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: api.URL, ContentConfig: rest.ContentConfig{ContentType: "application/json"}})
	require.NoError(t, err)
	return fake, cs
}

// A token the API server accepts and a user it allows get /metrics; anyone else gets kube's 401
// or 403; answers are kept, so repeated scrapes make no more reviews.
func TestProtect(t *testing.T) {
	fake, cs := startFake(t)
	authentication := authn.Authentication{Authenticators: []authn.Authenticator{
		authn.NewBearer(nil, authn.NewTokenReview(cs.AuthenticationV1().TokenReviews(), CacheTTL)),
	}}
	h := Protect(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("metrics")) }),
		authentication, NewAuthorizer(cs.AuthorizationV1().SubjectAccessReviews()))

	do := func(path, token string) (int, metav1.Status, string) {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		var st metav1.Status
		if w.Code != http.StatusOK {
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &st), w.Body.String())
		}
		return w.Code, st, w.Body.String()
	}
	for range 3 {
		code, _, body := do("/metrics", "good")
		require.Equal(t, http.StatusOK, code)
		assert.Equal(t, "metrics", body)
	}
	assert.EqualValues(t, 1, fake.tokenReviews.Load(), "the token's review is kept")
	assert.EqualValues(t, 1, fake.accessReviews.Load(), "the access review is kept")

	code, st, _ := do("/debug/pprof/", "good")
	assert.Equal(t, http.StatusForbidden, code)
	assert.Equal(t, metav1.StatusReasonForbidden, st.Reason)
	assert.Equal(t, `forbidden: User "prometheus" cannot get path "/debug/pprof/"`, st.Message)

	for _, token := range []string{"", "bad", "unknown"} {
		code, st, _ := do("/metrics", token)
		assert.Equal(t, http.StatusUnauthorized, code, token)
		assert.Equal(t, metav1.StatusReasonUnauthorized, st.Reason, token)
		assert.EqualValues(t, 401, st.Code)
	}
}

// A kept answer ends after CacheTTL.
func TestAuthorizerCacheExpires(t *testing.T) {
	fake, cs := startFake(t)
	a := NewAuthorizer(cs.AuthorizationV1().SubjectAccessReviews())
	now := time.Now()
	a.now = func() time.Time { return now }
	u := &user.User{Name: "prometheus", Groups: []string{"system:monitoring"}}
	for range 2 {
		ok, _, err := a.Allowed(t.Context(), u, "get", "/metrics")
		require.NoError(t, err)
		assert.True(t, ok)
	}
	assert.EqualValues(t, 1, fake.accessReviews.Load())
	now = now.Add(CacheTTL + time.Second)
	_, _, err := a.Allowed(t.Context(), u, "get", "/metrics")
	require.NoError(t, err)
	assert.EqualValues(t, 2, fake.accessReviews.Load())
}
