package filters

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apichain/apichain/pkg/audit"
)

func TestWithAuditID(t *testing.T) {
	cases := []struct {
		name       string
		header     string // sent Audit-ID; "" sends none
		wantEchoed bool   // the response carries the sent ID, else a fresh UUID
	}{
		{name: "absent", header: ""},
		{name: "given", header: "my-audit-id", wantEchoed: true},
		{name: "given uuid", header: "1b4e28ba-2fa1-11d2-883f-0016d3cca427", wantEchoed: true},
		{name: "128 chars kept", header: strings.Repeat("a", 128), wantEchoed: true},
		{name: "over 128 chars replaced", header: strings.Repeat("a", 129)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var inCtx string
			h := WithAuditID(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				inCtx = audit.IDFrom(r.Context())
			}))
			req := httptest.NewRequest("GET", "/api/v1/pods", nil)
			if tc.header != "" {
				req.Header.Set(audit.IDHeader, tc.header)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)

			got := rec.Header().Get(audit.IDHeader)
			require.NotEmpty(t, got)
			assert.Equal(t, got, inCtx, "the context and the response carry the same ID")
			if tc.wantEchoed {
				assert.Equal(t, tc.header, got)
				return
			}
			_, err := uuid.Parse(got)
			assert.NoError(t, err, "a generated ID is a UUID: %q", got)
		})
	}
}

func TestWithAuditIDGeneratesFreshIDs(t *testing.T) {
	h := WithAuditID(okHandler)
	a := serve(h, "GET", "/").Header().Get(audit.IDHeader)
	b := serve(h, "GET", "/").Header().Get(audit.IDHeader)
	assert.NotEqual(t, a, b)
}

func TestAuditIDFromWithoutFilter(t *testing.T) {
	assert.Empty(t, audit.IDFrom(context.Background()))
}
