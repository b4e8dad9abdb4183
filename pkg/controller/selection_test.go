package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// --controllers decides as kube-controller-manager's does, with its old names too.
func TestSelection(t *testing.T) {
	for _, tc := range []struct {
		s    Selection
		name string
		want bool
	}{
		{nil, GarbageCollector, true},
		{Selection{"*"}, Namespace, true},
		{Selection{}, Namespace, false},
		{Selection{"*", "-serviceaccount"}, ServiceAccount, false},
		{Selection{"*", "-serviceaccount"}, RootCACertPublisher, true},
		{Selection{"-serviceaccount-controller", "*"}, ServiceAccount, false},
		{Selection{"podgc"}, PodGarbageCollector, true},
		{Selection{"podgc"}, GarbageCollector, false},
	} {
		assert.Equal(t, tc.want, tc.s.Enabled(tc.name), "%v %s", tc.s, tc.name)
	}
	require.NoError(t, Selection{"*", "-garbagecollector", "namespace-controller"}.Validate())
	assert.ErrorContains(t, Selection{"-deployment"}.Validate(), `"deployment" is not in the list of known controllers`)
}
