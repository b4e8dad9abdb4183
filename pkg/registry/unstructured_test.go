package registry

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var widgetGVK = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}

// widgetsResource is a custom resource as extensions serves one: unstructured objects.
func widgetsResource() *Resource {
	return &Resource{GroupVersion: widgetGVK.GroupVersion(), Name: "widgets", SingularName: "widget", Kind: "Widget", Namespaced: true,
		Subresources: []string{"status"}, HasSpec: true, New: NewUnstructured(widgetGVK), NewList: NewUnstructuredList(widgetGVK)}
}

func widgetJSON(name string, size int) string {
	data, _ := json.Marshal(map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": name, "labels": map[string]any{"size": "s"}},
		"spec": map[string]any{"size": size}, "status": map[string]any{"ready": true}})
	return string(data)
}

func decodeWidget(t *testing.T, body *resourcev1.Body) *unstructured.Unstructured {
	t.Helper()
	require.Equal(t, MediaJSON, body.GetContentType())
	u := &unstructured.Unstructured{}
	require.NoError(t, u.UnmarshalJSON(body.GetData()))
	return u
}

// The registry serves unstructured objects with the same semantics as typed ones: system
// fields, status kept by the main resource and written by its subresource, generation on
// spec changes, selectors, JSON and merge patches, server-side apply; and what kube does
// differently for custom resources: JSON only, no strategic merge patch.
func TestUnstructuredResource(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	resp, err := testH.Create(ctx, &resourcev1.CreateRequest{Ref: ref(widgetResource, ns, ""),
		Body:     &resourcev1.Body{ContentType: MediaJSON, Data: []byte(widgetJSON("w1", 1))},
		Encoding: &resourcev1.Encoding{Accept: MediaProtobuf + ", " + MediaJSON}})
	require.NoError(t, err)
	created := decodeWidget(t, resp.GetBody())
	assert.NotEmpty(t, created.GetUID())
	assert.EqualValues(t, 1, created.GetGeneration())
	assert.NotContains(t, created.Object, "status", "a client does not set status on create")
	assert.Equal(t, "example.com/v1", created.GetAPIVersion())

	// Only protobuf acceptable: kube's 406.
	_, err = testH.Get(ctx, &resourcev1.GetRequest{Ref: ref(widgetResource, ns, "w1"), Encoding: &resourcev1.Encoding{Accept: MediaProtobuf}})
	assert.EqualValues(t, http.StatusNotAcceptable, kubeStatus(t, err).Code)

	// Status through its subresource; the main resource keeps it and bumps generation on spec.
	st := created.DeepCopy()
	require.NoError(t, unstructured.SetNestedField(st.Object, true, "status", "ready"))
	require.NoError(t, unstructured.SetNestedField(st.Object, int64(9), "spec", "size"))
	data, _ := json.Marshal(st.Object)
	resp2, err := testH.Update(ctx, &resourcev1.UpdateRequest{Ref: subRef(widgetResource, ns, "w1", "status"), Body: &resourcev1.Body{ContentType: MediaJSON, Data: data}})
	require.NoError(t, err)
	afterStatus := decodeWidget(t, resp2.GetBody())
	ready, _, _ := unstructured.NestedBool(afterStatus.Object, "status", "ready")
	size, _, _ := unstructured.NestedInt64(afterStatus.Object, "spec", "size")
	assert.True(t, ready)
	assert.EqualValues(t, 1, size, "the status subresource changes only status")
	assert.EqualValues(t, 1, afterStatus.GetGeneration())

	mp, err := testH.Patch(ctx, &resourcev1.PatchRequest{Ref: ref(widgetResource, ns, "w1"),
		Body: &resourcev1.Body{ContentType: mergePatchType, Data: []byte(`{"spec":{"size":2},"status":{"ready":false}}`)}})
	require.NoError(t, err)
	patched := decodeWidget(t, mp.GetBody())
	size, _, _ = unstructured.NestedInt64(patched.Object, "spec", "size")
	ready, _, _ = unstructured.NestedBool(patched.Object, "status", "ready")
	assert.EqualValues(t, 2, size)
	assert.True(t, ready, "the main resource keeps status")
	assert.EqualValues(t, 2, patched.GetGeneration())
	managers := []string{}
	for _, m := range patched.GetManagedFields() {
		managers = append(managers, m.Manager+"/"+string(m.Operation))
	}
	assert.NotEmpty(t, managers, "managed fields are tracked for custom resources")

	_, err = testH.Patch(ctx, &resourcev1.PatchRequest{Ref: ref(widgetResource, ns, "w1"),
		Body: &resourcev1.Body{ContentType: strategicPatchType, Data: []byte(`{"spec":{"size":3}}`)}})
	st415 := kubeStatus(t, err)
	assert.EqualValues(t, http.StatusUnsupportedMediaType, st415.Code)
	assert.Equal(t, "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml", st415.Message)

	ap, err := testH.Patch(ctx, &resourcev1.PatchRequest{Ref: ref(widgetResource, ns, "w2"),
		Body:    &resourcev1.Body{ContentType: applyPatchType, Data: []byte("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w2}\nspec: {size: 5, colors: [red]}\n")},
		Options: &resourcev1.WriteOptions{FieldManager: "tool"}, Force: true})
	require.NoError(t, err)
	applied := decodeWidget(t, ap.GetBody())
	assert.Equal(t, "tool", applied.GetManagedFields()[0].Manager)
	assert.Equal(t, metav1.ManagedFieldsOperationApply, applied.GetManagedFields()[0].Operation)

	// Lists and selectors.
	list, err := testH.List(ctx, &resourcev1.ListRequest{Ref: ref(widgetResource, ns, ""), Options: &resourcev1.ListOptions{LabelSelector: "size=s"}})
	require.NoError(t, err)
	var l struct {
		Kind  string
		Items []map[string]any
	}
	require.NoError(t, json.Unmarshal(list.GetBody().GetData(), &l))
	assert.Equal(t, "WidgetList", l.Kind)
	require.Len(t, l.Items, 1)
	assert.Equal(t, "w1", l.Items[0]["metadata"].(map[string]any)["name"])

	// The watch cache serves them too, and Tables have kube's default columns.
	cached, err := testCachedH.List(ctx, &resourcev1.ListRequest{Ref: ref(widgetResource, ns, ""),
		Encoding: &resourcev1.Encoding{Accept: "application/json;as=Table;v=v1;g=meta.k8s.io"}})
	require.NoError(t, err)
	var table metav1.Table
	require.NoError(t, json.Unmarshal(cached.GetBody().GetData(), &table))
	require.Len(t, table.Rows, 2)
	require.Len(t, table.ColumnDefinitions, 2)
	assert.Equal(t, []string{"Name", "Age"}, []string{table.ColumnDefinitions[0].Name, table.ColumnDefinitions[1].Name})

	// A protobuf body is kube's 415 for a custom resource.
	_, err = testH.Create(ctx, &resourcev1.CreateRequest{Ref: ref(widgetResource, ns, ""),
		Body: &resourcev1.Body{ContentType: MediaProtobuf, Data: []byte("k8s\x00")}})
	assert.EqualValues(t, http.StatusUnsupportedMediaType, kubeStatus(t, err).Code)
}

// A custom resource served in another version than its CRD's storage version is stored in the
// storage version, and the object keeps its own.
func TestStoredAs(t *testing.T) {
	v2 := schema.GroupVersionKind{Group: "example.com", Version: "v2", Kind: "Widget"}
	r := &Resource{GroupVersion: v2.GroupVersion(), Name: "widgets", Kind: "Widget", Namespaced: true,
		New: NewUnstructured(v2), NewList: NewUnstructuredList(v2), StoredAs: widgetGVK.GroupVersion()}
	obj := r.New().(*unstructured.Unstructured)
	obj.SetName("w")
	data, err := testH.encodeStored(r, obj)
	require.NoError(t, err)
	assert.Contains(t, string(data), `"apiVersion":"example.com/v1"`)
	assert.Equal(t, "example.com/v2", obj.GetAPIVersion())
	back, err := testH.decodeStored(r, data, 7)
	require.NoError(t, err)
	assert.Equal(t, "example.com/v2", back.(*unstructured.Unstructured).GetAPIVersion(), "read in the served version")
}
