package discovery

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDocumentGroupVersion(t *testing.T) {
	tests := []struct {
		path, want string
	}{
		{"/api", "v1"},
		{"/api/", "v1"},
		{"/api/v1", "v1"},
		{"/api/v1/", "v1"},
		{"/apis/apps/v1", "apps/v1"},
		{"/apis/apps/v1/", "apps/v1"},
		{"/apis/apiextensions.k8s.io/v1beta1", "apiextensions.k8s.io/v1beta1"},
		// No route key: asked down the chain.
		{"/apis", ""},
		{"/apis/apps", ""},
		{"/apis/apps/", ""},
		{"/api/v1/pods", ""},
		{"/apis/apps/v1/deployments", ""},
		{"/openapi/v2", ""},
		{"/openapi/v3/apis/apps/v1", "apps/v1"},
		{"/openapi/v3/api/v1", "v1"},
		{"/", ""},
		{"", ""},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			assert.Equal(t, tt.want, documentGroupVersion(tt.path))
		})
	}
}
