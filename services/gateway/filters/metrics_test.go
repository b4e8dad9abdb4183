package filters

import (
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apichain/apichain/pkg/requestinfo"
)

// Requests are labelled as kube's request metrics label them.
func TestRequestMetricLabels(t *testing.T) {
	resolver := requestinfo.NewResolver()
	for _, tc := range []struct {
		method, target, contentType string
		verb, dryRun, scope         string
	}{
		{"GET", "/api/v1/namespaces/ns/configmaps/a", "", "GET", "", "resource"},
		{"GET", "/api/v1/namespaces/ns/configmaps", "", "LIST", "", "namespace"},
		{"GET", "/api/v1/configmaps", "", "LIST", "", "cluster"},
		{"GET", "/api/v1/namespaces/ns/configmaps?watch=true", "", "WATCH", "", "namespace"},
		{"POST", "/api/v1/namespaces/ns/configmaps?dryRun=All&dryRun=All", "", "POST", "All", "resource"},
		{"POST", "/api/v1/namespaces/ns/configmaps?dryRun=Some", "", "POST", "invalid", "resource"},
		{"PUT", "/api/v1/namespaces/ns/configmaps/a", "", "PUT", "", "resource"},
		{"PATCH", "/api/v1/namespaces/ns/configmaps/a", "application/apply-patch+yaml", "APPLY", "", "resource"},
		{"PATCH", "/api/v1/namespaces/ns/configmaps/a", "application/merge-patch+json", "PATCH", "", "resource"},
		{"DELETE", "/api/v1/namespaces/ns/configmaps", "", "DELETECOLLECTION", "", "namespace"},
		{"POST", "/api/v1/namespaces/ns/pods/p/exec", "", "CONNECT", "", "resource"},
		{"GET", "/healthz", "", "GET", "", ""},
		{"OPTIONS", "/healthz", "", "other", "", ""},
	} {
		r := httptest.NewRequest(tc.method, tc.target, nil)
		if tc.contentType != "" {
			r.Header.Set("Content-Type", tc.contentType)
		}
		info, err := resolver.Resolve(r)
		require.NoError(t, err)
		assert.Equal(t, tc.verb, metricVerb(r, info), "%s %s", tc.method, tc.target)
		assert.Equal(t, tc.dryRun, metricDryRun(r), "%s %s", tc.method, tc.target)
		assert.Equal(t, tc.scope, metricScope(info), "%s %s", tc.method, tc.target)
	}
}
