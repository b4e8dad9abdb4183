package filters

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/apichain/apichain/pkg/authn"
	"github.com/apichain/apichain/pkg/requestinfo"
	"github.com/apichain/apichain/pkg/server"
	"github.com/apichain/apichain/pkg/user"
	"github.com/stretchr/testify/assert"
)

// curl, Wget and browsers get indented Status JSON from whichever filter answers, as from
// kube; ?pretty= decides when given.
func TestPrettyStatus(t *testing.T) {
	h := BuildHandlerChain(okHandler, ChainConfig{Log: discardLog, RequestTimeout: time.Hour,
		Authentication: authn.Authentication{Authenticators: []authn.Authenticator{authn.NewBearer(nil)}, Anonymous: true},
		Authorizer:     authorizerFunc(func(*user.User, *requestinfo.RequestInfo) (bool, string) { return false, "" }),
		InFlight:       &server.SafeWaitGroup{}})
	for _, tc := range []struct {
		ua, query string
		pretty    bool
	}{
		{"curl/7.88.1", "", true},
		{"Wget/1.21", "", true},
		{"Mozilla/5.0 (X11)", "", true},
		{"kubectl/v1.32.4", "", false},
		{"kubectl/v1.32.4", "?pretty=true", true},
		{"curl/7.88.1", "?pretty=false", false},
	} {
		for _, token := range []string{"nope", ""} { // a 401 from authentication, a 403 from authorization
			r := httptest.NewRequest("GET", "/api"+tc.query, nil)
			r.Header.Set("User-Agent", tc.ua)
			if token != "" {
				r.Header.Set("Authorization", "Bearer "+token)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			assert.Equal(t, tc.pretty, strings.HasPrefix(w.Body.String(), "{\n  \"kind\": \"Status\""), "%s%s: %s", tc.ua, tc.query, w.Body.String())
			assert.Contains(t, []int{http.StatusUnauthorized, http.StatusForbidden}, w.Code)
		}
	}
}
