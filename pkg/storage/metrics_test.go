package storage

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Without the registry's layout a key's resource is its first segment, as kube's default
// prefixes are; with it, the layout says.
func TestGroupResource(t *testing.T) {
	s := NewStore(testClient, DefaultPrefix)
	for key, want := range map[string]schema.GroupResource{
		"/configmaps/ns/name":    {Resource: "configmaps"},
		"/deployments/":          {Resource: "deployments"},
		"/services/specs/ns/a":   {Resource: "services"},
		"/apichain/nodeports/30": {Resource: "apichain"},
		"/__revision_probe":      {Resource: "__revision_probe"},
	} {
		assert.Equal(t, want, s.groupResource(key), key)
	}
	layout := s.Resolving(func(key string) (schema.GroupResource, bool) {
		if key == "/example.com/widgets/ns/w" {
			return schema.GroupResource{Group: "example.com", Resource: "widgets"}, true
		}
		return schema.GroupResource{}, false
	})
	assert.Equal(t, schema.GroupResource{Group: "example.com", Resource: "widgets"}, layout.groupResource("/example.com/widgets/ns/w"))
	assert.Equal(t, schema.GroupResource{Resource: "pods"}, layout.groupResource("/pods/ns/p"))
}

func TestCleanPrefix(t *testing.T) {
	for in, want := range map[string]string{"/registry": "/registry", "registry": "/registry", "/registry/": "/registry", "": "", "/": "", "/a//b/": "/a/b"} {
		assert.Equal(t, want, CleanPrefix(in), in)
	}
}
