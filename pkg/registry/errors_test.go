package registry

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/apichain/apichain/pkg/storage"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// etcd's unavailability that outlasts a request is a 503 or 504 saying when to retry (so
// client-go retries it), never a 500.
func TestStoreErrorUnavailability(t *testing.T) {
	gr := schema.GroupResource{Resource: "configmaps"}
	for _, c := range []struct {
		err  error
		code int32
	}{
		{fmt.Errorf("%w: etcdserver: no leader", storage.ErrUnavailable), http.StatusServiceUnavailable},
		{fmt.Errorf("%w: etcdserver: request timed out", storage.ErrOutcomeUnknown), http.StatusGatewayTimeout},
	} {
		var se apierrors.APIStatus
		require.ErrorAs(t, storeError(c.err, gr, "a"), &se)
		st := se.Status()
		assert.Equal(t, c.code, st.Code)
		require.NotNil(t, st.Details)
		assert.Equal(t, int32(1), st.Details.RetryAfterSeconds)
		assert.Contains(t, st.Message, "etcdserver")
		_, retry := apierrors.SuggestsClientDelay(storeError(c.err, gr, "a"))
		assert.True(t, retry)
	}
}
