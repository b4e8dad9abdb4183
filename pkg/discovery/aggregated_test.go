package discovery

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestGroupVersion(t *testing.T) {
	assert.Equal(t, "v1", GroupVersion("", "v1"))
	assert.Equal(t, "apps/v1", GroupVersion("apps", "v1"))
}
