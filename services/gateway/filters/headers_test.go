package filters

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestWithCacheControl(t *testing.T) {
	cases := []struct {
		name     string
		preset   string // set by an outer filter before this one runs
		byInner  string // set by the handler
		expected string
	}{
		{name: "default", expected: "no-cache, private"},
		{name: "outer value kept", preset: "public, max-age=60", expected: "public, max-age=60"},
		{name: "handler may override", byInner: "max-age=3600", expected: "max-age=3600"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := WithCacheControl(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.byInner != "" {
					w.Header().Set("Cache-Control", tc.byInner)
				}
				okHandler(w, r)
			}))
			rec := httptest.NewRecorder()
			if tc.preset != "" {
				rec.Header().Set("Cache-Control", tc.preset)
			}
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/pods", nil))
			assert.Equal(t, http.StatusOK, rec.Code)
			assert.Equal(t, tc.expected, rec.Header().Get("Cache-Control"))
		})
	}
}

func TestWithCacheControlOnErrors(t *testing.T) {
	// Set before the handler runs, so error answers are not cacheable either.
	h := WithCacheControl(panicking("boom"))
	h = WithPanicRecovery(h, discardLog)
	rec := serve(h, "GET", "/api/v1/pods")
	requireRecStatus(t, rec, panicStatus)
	assert.Equal(t, "no-cache, private", rec.Header().Get("Cache-Control"))
}

func TestWithHSTS(t *testing.T) {
	cases := []struct {
		directives string
		expected   []string
	}{
		{"", nil},
		{"max-age=31536000", []string{"max-age=31536000"}},
		{"max-age=31536000; includeSubDomains; preload", []string{"max-age=31536000; includeSubDomains; preload"}},
	}
	for _, tc := range cases {
		t.Run(tc.directives, func(t *testing.T) {
			rec := serve(WithHSTS(okHandler, tc.directives), "GET", "/")
			assert.Equal(t, http.StatusOK, rec.Code)
			assert.Equal(t, tc.expected, rec.Header().Values("Strict-Transport-Security"))
		})
	}
}
