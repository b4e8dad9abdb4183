package apiservice

import (
	"context"
	"errors"
	"testing"

	"github.com/apichain/apichain/pkg/apiregistration"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A remote APIService's documents are downloaded again only when they changed: v3 when its
// server's index names another hash, v2 when the server does not answer 304 to the ETag.
// What cannot be read keeps what was read before; a server without v3 has none.
func TestRemoteSpecRefresh(t *testing.T) {
	a := &apiregistration.APIService{Spec: apiregistration.APIServiceSpec{Group: "wardle.example.com", Version: "v1alpha1"}}
	docs := map[string]string{
		"/openapi/v3": `{"paths":{"apis/wardle.example.com/v1alpha1":{"serverRelativeURL":"/openapi/v3/apis/wardle.example.com/v1alpha1?hash=A"},` +
			`"apis/wardle.example.com/v1beta1":{"serverRelativeURL":"/openapi/v3/apis/wardle.example.com/v1beta1?hash=B"}}}`,
		"/openapi/v3/apis/wardle.example.com/v1alpha1?hash=A": `{"openapi":"3.0.0","x":"A"}`,
		"/openapi/v2": `{"swagger":"2.0","paths":{}}`,
	}
	var asked []string
	v2ETag := `"one"`
	fetch := func(_ context.Context, _ *apiregistration.APIService, path, etag string) ([]byte, string, error) {
		asked = append(asked, path+" "+etag)
		if path == "/openapi/v2" && etag == v2ETag {
			return nil, etag, nil
		}
		doc, ok := docs[path]
		switch {
		case !ok:
			return nil, "", apierrors.NewNotFound(schema.GroupResource{}, path)
		case doc == "broken":
			return nil, "", errors.New("connection refused")
		}
		return []byte(doc), v2ETag, nil
	}
	s := &remoteSpec{}
	require.NoError(t, s.refresh(context.Background(), a, fetch))
	assert.JSONEq(t, docs["/openapi/v3/apis/wardle.example.com/v1alpha1?hash=A"], string(s.v3))
	assert.JSONEq(t, docs["/openapi/v2"], string(s.v2))
	assert.Equal(t, []string{"/openapi/v3 ", "/openapi/v3/apis/wardle.example.com/v1alpha1?hash=A ", `/openapi/v2 `}, asked)

	asked = nil
	require.NoError(t, s.refresh(context.Background(), a, fetch))
	assert.Equal(t, []string{"/openapi/v3 ", `/openapi/v2 "one"`}, asked, "nothing changed: nothing downloaded again")

	docs["/openapi/v3"], docs["/openapi/v2"], v2ETag = "broken", "broken", `"two"`
	assert.Error(t, s.refresh(context.Background(), a, fetch))
	assert.NotNil(t, s.v3, "kept while the server does not answer")
	assert.NotNil(t, s.v2)

	delete(docs, "/openapi/v3")
	docs["/openapi/v2"] = `{"swagger":"2.0","paths":[]}`
	assert.Error(t, s.refresh(context.Background(), a, fetch), "a v2 document that is not swagger is refused")
	assert.Nil(t, s.v3, "a server without v3")
	assert.JSONEq(t, `{"swagger":"2.0","paths":{}}`, string(s.v2))
}
