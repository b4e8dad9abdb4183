package backend

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	discoveryv1 "github.com/apichain/apichain/gen/apichain/discovery/v1"
	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/rpcstatus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// testServed is a small core-like server: the legacy group plus two groups, apps with two
// versions (v1 preferred) and autoscaling listed v2 before v1 (v2 preferred), and a group
// with no resources yet.
func testServed() []*discoveryv1.GroupVersion {
	hpa := []*discoveryv1.Resource{{Name: "horizontalpodautoscalers", Namespaced: true, Kind: "HorizontalPodAutoscaler", Verbs: []string{"get"}}}
	return []*discoveryv1.GroupVersion{
		{Group: "", Version: "v1", Resources: []*discoveryv1.Resource{
			{Name: "pods", SingularName: "pod", Namespaced: true, Kind: "Pod", Verbs: []string{"list", "get", "create", "delete"},
				ShortNames: []string{"po"}, Categories: []string{"all"}, Subresources: []string{"status", "log"}},
			{Name: "namespaces", SingularName: "namespace", Kind: "Namespace", Verbs: []string{"get", "list"}, ShortNames: []string{"ns"}},
		}},
		{Group: "apps", Version: "v1", Resources: []*discoveryv1.Resource{
			{Name: "deployments", SingularName: "deployment", Namespaced: true, Kind: "Deployment", Verbs: []string{"watch", "get"}},
		}},
		{Group: "empty.example.com", Version: "v1"},
		{Group: "autoscaling", Version: "v2", Resources: hpa},
		{Group: "apps", Version: "v1beta1", Resources: []*discoveryv1.Resource{{Name: "deployments", Namespaced: true, Kind: "Deployment"}}},
		{Group: "autoscaling", Version: "v1", Resources: hpa},
	}
}

func getDocument(t *testing.T, d *Discovery, path string) ([]byte, error) {
	t.Helper()
	hb, err := d.GetDocument(context.Background(), &discoveryv1.GetDocumentRequest{Path: path})
	if err != nil {
		return nil, err
	}
	assert.Equal(t, "application/json", hb.GetContentType())
	return hb.GetData(), nil
}

func decode[T any](t *testing.T, data []byte) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal(data, &v), string(data))
	return v
}

func TestDiscoveryAPIVersions(t *testing.T) {
	d := NewDiscovery(testServed())
	for _, path := range []string{"/api", "/api/", "api"} {
		t.Run(path, func(t *testing.T) {
			data, err := getDocument(t, d, path)
			require.NoError(t, err)
			assert.JSONEq(t, `{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[]}`, string(data))
			got := decode[metav1.APIVersions](t, data)
			assert.Equal(t, []string{"v1"}, got.Versions)
		})
	}

	t.Run("not served without the legacy group", func(t *testing.T) {
		d := NewDiscovery([]*discoveryv1.GroupVersion{{Group: "apps", Version: "v1"}})
		_, err := getDocument(t, d, "/api")
		assert.True(t, rpcstatus.IsNotServed(err), "err = %v", err)
	})
}

func TestDiscoveryAPIResourceList(t *testing.T) {
	d := NewDiscovery(testServed())

	t.Run("legacy v1", func(t *testing.T) {
		for _, path := range []string{"/api/v1", "/api/v1/"} {
			data, err := getDocument(t, d, path)
			require.NoError(t, err, path)
			got := decode[metav1.APIResourceList](t, data)
			want := metav1.APIResourceList{
				TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
				GroupVersion: "v1",
				APIResources: []metav1.APIResource{
					{Name: "pods", SingularName: "pod", Namespaced: true, Kind: "Pod",
						Verbs: metav1.Verbs{"create", "delete", "get", "list"}, ShortNames: []string{"po"}, Categories: []string{"all"}},
					{Name: "pods/status", Namespaced: true, Kind: "Pod", Verbs: metav1.Verbs{"get", "patch", "update"}},
					{Name: "pods/log", Namespaced: true, Kind: "Pod", Verbs: metav1.Verbs{"get"}}, // as kube lists pods/log,
					{Name: "namespaces", SingularName: "namespace", Kind: "Namespace", Verbs: metav1.Verbs{"get", "list"}, ShortNames: []string{"ns"}},
				},
			}
			assert.Equal(t, want, got, path)
		}
	})

	t.Run("group version", func(t *testing.T) {
		for _, path := range []string{"/apis/apps/v1", "/apis/apps/v1/"} {
			data, err := getDocument(t, d, path)
			require.NoError(t, err, path)
			got := decode[metav1.APIResourceList](t, data)
			assert.Equal(t, "APIResourceList", got.Kind)
			assert.Equal(t, "v1", got.APIVersion)
			assert.Equal(t, "apps/v1", got.GroupVersion)
			require.Len(t, got.APIResources, 1)
			assert.Equal(t, "deployments", got.APIResources[0].Name)
			assert.Equal(t, metav1.Verbs{"get", "watch"}, got.APIResources[0].Verbs, "verbs are sorted")
		}
	})

	t.Run("served version without resources lists none, not null", func(t *testing.T) {
		data, err := getDocument(t, d, "/apis/empty.example.com/v1")
		require.NoError(t, err)
		assert.JSONEq(t, `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"empty.example.com/v1","resources":[]}`, string(data))
	})

	t.Run("verbs are not sorted in place", func(t *testing.T) {
		served := testServed()
		_, err := getDocument(t, NewDiscovery(served), "/api/v1")
		require.NoError(t, err)
		assert.Equal(t, []string{"list", "get", "create", "delete"}, served[0].GetResources()[0].GetVerbs())
	})
}

func TestDiscoveryAPIGroup(t *testing.T) {
	d := NewDiscovery(testServed())
	tests := []struct {
		path string
		want metav1.APIGroup
	}{
		{"/apis/apps", metav1.APIGroup{
			TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"},
			Name:     "apps",
			Versions: []metav1.GroupVersionForDiscovery{
				{GroupVersion: "apps/v1", Version: "v1"},
				{GroupVersion: "apps/v1beta1", Version: "v1beta1"},
			},
			PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: "apps/v1", Version: "v1"},
		}},
		{"/apis/autoscaling/", metav1.APIGroup{
			TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"},
			Name:     "autoscaling",
			Versions: []metav1.GroupVersionForDiscovery{
				{GroupVersion: "autoscaling/v2", Version: "v2"},
				{GroupVersion: "autoscaling/v1", Version: "v1"},
			},
			PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: "autoscaling/v2", Version: "v2"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			data, err := getDocument(t, d, tt.path)
			require.NoError(t, err)
			assert.Equal(t, tt.want, decode[metav1.APIGroup](t, data))
		})
	}
}

func TestDiscoveryAPIGroupList(t *testing.T) {
	for _, path := range []string{"/apis", "/apis/"} {
		t.Run(path, func(t *testing.T) {
			data, err := getDocument(t, NewDiscovery(testServed()), path)
			require.NoError(t, err)
			got := decode[metav1.APIGroupList](t, data)
			assert.Equal(t, "APIGroupList", got.Kind)
			assert.Equal(t, "v1", got.APIVersion)
			require.Len(t, got.Groups, 2, "neither the legacy group nor a group without resources is listed under /apis")
			assert.Equal(t, "apps", got.Groups[0].Name, "groups in served order")
			assert.Equal(t, "apps/v1", got.Groups[0].PreferredVersion.GroupVersion)
			assert.Len(t, got.Groups[0].Versions, 2)
			assert.Equal(t, "autoscaling", got.Groups[1].Name)
			assert.Equal(t, "autoscaling/v2", got.Groups[1].PreferredVersion.GroupVersion)
			assert.Equal(t, "autoscaling/v2", got.Groups[1].Versions[0].GroupVersion, "preferred version first")
		})
	}

	t.Run("a group is listed once a version has resources", func(t *testing.T) {
		d := NewDiscovery([]*discoveryv1.GroupVersion{
			{Group: "g.example.com", Version: "v2"},
			{Group: "g.example.com", Version: "v1", Resources: []*discoveryv1.Resource{{Name: "things", Kind: "Thing"}}},
		})
		data, err := getDocument(t, d, "/apis")
		require.NoError(t, err)
		got := decode[metav1.APIGroupList](t, data)
		require.Len(t, got.Groups, 1)
		assert.Equal(t, "g.example.com", got.Groups[0].Name)
	})

	t.Run("only the legacy group: empty list, not null", func(t *testing.T) {
		data, err := getDocument(t, NewDiscovery([]*discoveryv1.GroupVersion{{Version: "v1"}}), "/apis")
		require.NoError(t, err)
		assert.JSONEq(t, `{"kind":"APIGroupList","apiVersion":"v1","groups":[]}`, string(data))
	})
}

func TestDiscoveryNotServed(t *testing.T) {
	d := NewDiscovery(testServed())
	for _, path := range []string{
		"",
		"/",
		"/api/v2",
		"/api/v1/pods",
		"/apis/batch",
		"/apis/batch/v1",
		"/apis/apps/v2",
		"/apis/apps/v1/deployments",
		"/apis/v1",
		"/openapi/v2",
		"/version",
		"/apis//",
		"/apis//v1", // an empty group is not the legacy group
		"/api//",
	} {
		t.Run(path, func(t *testing.T) {
			_, err := getDocument(t, d, path)
			require.Error(t, err)
			assert.True(t, rpcstatus.IsNotServed(err), "err = %v", err)
			assert.Equal(t, codes.Unimplemented, status.Code(err))
		})
	}
}

func TestDiscoveryServedNames(t *testing.T) {
	served := testServed()
	d := NewDiscovery(served)
	assert.Equal(t, []string{"v1", "apps/v1", "empty.example.com/v1", "autoscaling/v2", "apps/v1beta1", "autoscaling/v1"}, d.ServedNames())

	assert.Empty(t, NewDiscovery(nil).ServedNames())
}

func TestNotServedResources(t *testing.T) {
	ref := &resourcev1.ResourceRef{Group: "apps", Version: "v1", Resource: "deployments", Namespace: "ns", Name: "web"}
	ctx := context.Background()
	var r NotServedResources
	calls := map[string]func() error{
		"Get":    func() error { _, err := r.Get(ctx, &resourcev1.GetRequest{Ref: ref}); return err },
		"List":   func() error { _, err := r.List(ctx, &resourcev1.ListRequest{Ref: ref}); return err },
		"Watch":  func() error { return r.Watch(&resourcev1.WatchRequest{Ref: ref}, nil) },
		"Create": func() error { _, err := r.Create(ctx, &resourcev1.CreateRequest{Ref: ref}); return err },
		"Update": func() error { _, err := r.Update(ctx, &resourcev1.UpdateRequest{Ref: ref}); return err },
		"Patch":  func() error { _, err := r.Patch(ctx, &resourcev1.PatchRequest{Ref: ref}); return err },
		"Delete": func() error { _, err := r.Delete(ctx, &resourcev1.DeleteRequest{Ref: ref}); return err },
		"DeleteCollection": func() error {
			_, err := r.DeleteCollection(ctx, &resourcev1.DeleteCollectionRequest{Ref: ref})
			return err
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			err := call()
			require.Error(t, err)
			assert.True(t, rpcstatus.IsNotServed(err), "err = %v", err)
			assert.Contains(t, status.Convert(err).Message(), "apps/v1/deployments")
		})
	}

	t.Run("legacy group ref", func(t *testing.T) {
		_, err := r.Get(ctx, &resourcev1.GetRequest{Ref: &resourcev1.ResourceRef{Version: "v1", Resource: "pods"}})
		assert.True(t, rpcstatus.IsNotServed(err))
		assert.Contains(t, status.Convert(err).Message(), "v1/pods")
	})
	t.Run("nil ref", func(t *testing.T) {
		_, err := r.Get(ctx, &resourcev1.GetRequest{})
		assert.True(t, rpcstatus.IsNotServed(err))
	})
}

// A packed document reads back as it was, and documents are answered unpacked.
func TestOpenAPIPacked(t *testing.T) {
	v3 := []byte(`{"openapi":"3.0.0","paths":{"/api/v1/configmaps":{}}}`)
	d := &openAPIDocs{v3: map[string]packed{"/openapi/v3/api/v1": pack(v3)}, v2: pack([]byte(`{"swagger":"2.0"}`)),
		v2Proto: pack([]byte{1, 2, 3}), v2Hash: "h"}
	doc, ok := d.document("/openapi/v3/api/v1", "application/json", "")
	require.True(t, ok)
	assert.Equal(t, v3, doc.GetData())
	doc, ok = d.document("/openapi/v2", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf", "")
	require.True(t, ok)
	assert.Equal(t, []byte{1, 2, 3}, doc.GetData())
	doc, ok = d.document("/openapi/v2", "application/json", "")
	require.True(t, ok)
	assert.JSONEq(t, `{"swagger":"2.0"}`, string(doc.GetData()))
	big := bytes.Repeat([]byte(`{"type":"object","properties":{}},`), 10000)
	assert.Less(t, len(pack(big)), len(big)/10)
	assert.Equal(t, big, pack(big).unpack())
}
