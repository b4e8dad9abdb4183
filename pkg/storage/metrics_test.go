package storage

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestGroupResource(t *testing.T) {
	for key, want := range map[string][2]string{
		"/registry/core/configmaps/ns/name":  {"", "configmaps"},
		"/registry/core/namespaces/default":  {"", "namespaces"},
		"/registry/apps/deployments/":        {"apps", "deployments"},
		"/registry/example.com/widgets/ns/w": {"example.com", "widgets"},
		"/registry/apichain/nodeports/30000": {"apichain", "nodeports"},
		"/registry/__revision_probe":         {"", "__revision_probe"},
		"/elsewhere":                         {"", ""},
	} {
		g, r := groupResource(key)
		assert.Equal(t, want, [2]string{g, r}, key)
	}
}
