package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
)

// Keys are kube-apiserver 1.37's: the resource's name, kube's special prefixes, and
// <group>/<resource> where a resource says so (custom resources, CRDs, APIServices).
func TestKeysAreKubes(t *testing.T) {
	r := func(group, name string, namespaced bool) *Resource {
		return &Resource{GroupVersion: schema.GroupVersion{Group: group, Version: "v1"}, Name: name, Namespaced: namespaced}
	}
	events := r("events.k8s.io", "events", true)
	events.Convert = &Conversion{Stored: corev1.SchemeGroupVersion}
	widgets := r("example.com", "widgets", true)
	widgets.StoragePrefix = "example.com/widgets"
	for want, k := range map[string]string{
		"/configmaps/ns/a":          key(r("", "configmaps", true), "ns", "a"),
		"/services/specs/ns/a":      key(r("", "services", true), "ns", "a"),
		"/services/endpoints/ns/a":  key(r("", "endpoints", true), "ns", "a"),
		"/minions/n":                key(r("", "nodes", false), "", "n"),
		"/controllers/ns/rc":        key(r("", "replicationcontrollers", true), "ns", "rc"),
		"/ingress/ns/i":             key(r("networking.k8s.io", "ingresses", true), "ns", "i"),
		"/deployments/ns/d":         key(r("apps", "deployments", true), "ns", "d"),
		"/clusterroles/admin":       key(r("rbac.authorization.k8s.io", "clusterroles", false), "", "admin"),
		"/events/ns/e":              key(events, "ns", "e"),
		"/example.com/widgets/ns/w": key(widgets, "ns", "w"),
		"/example.com/widgets/":     prefix(widgets, ""),
		"/namespaces/":              prefix(r("", "namespaces", false), "ignored"),
	} {
		assert.Equal(t, want, k)
	}
	set := NewSet(r("", "services", true), r("", "endpoints", true), widgets, events)
	for k, want := range map[string]string{
		"/services/specs/ns/a":      "services",
		"/services/specs/":          "services",
		"/services/endpoints/ns/a":  "endpoints",
		"/example.com/widgets/ns/w": "example.com/widgets",
		"/events/ns/e":              "events", // kept as core's
		"/services/":                "",
		"/example.com/":             "",
		"/":                         "",
		"services/specs/a":          "",
	} {
		gr, ok := resourceOf(set.prefixes, k)
		assert.Equal(t, want != "", ok, k)
		if ok {
			assert.Equal(t, want, gr.Group+map[bool]string{true: "/", false: ""}[gr.Group != ""]+gr.Resource, k)
		}
	}
}

// Objects are stored as kube stores them: protobuf in kube's envelope, byte for byte what
// kube's own protobuf serializer writes, read back whether protobuf or JSON (an earlier
// apichain's), and JSON when the handler is told so.
func TestStoredEncodings(t *testing.T) {
	ns := newNamespace(t)
	_, err := testH.Create(context.Background(), &resourcev1.CreateRequest{Ref: ref(cmResource, ns, ""),
		Body: jsonBody(t, configMap("p", map[string]string{"a": "b"}))})
	require.NoError(t, err)
	resp, err := testClient.Get(context.Background(), "/registry/configmaps/"+ns+"/p")
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1)
	stored := resp.Kvs[0].Value
	require.True(t, bytes.HasPrefix(stored, []byte("k8s\x00")), "%q", stored)

	kube := protobuf.NewSerializer(testScheme, testScheme)
	obj, gvk, err := kube.Decode(stored, nil, nil)
	require.NoError(t, err, "kube's serializer reads it")
	assert.Equal(t, corev1.SchemeGroupVersion.WithKind("ConfigMap"), *gvk)
	cm := obj.(*corev1.ConfigMap)
	assert.Equal(t, "b", cm.Data["a"])
	assert.Empty(t, cm.ResourceVersion, "the revision is the version")
	var again bytes.Buffer
	require.NoError(t, kube.Encode(cm, &again))
	assert.Equal(t, again.Bytes(), stored, "what kube's serializer writes")

	// JSON, as an earlier apichain (and kube with --storage-media-type=application/json) wrote.
	cm.Data["a"] = "from-json"
	asJSON, err := json.Marshal(cm)
	require.NoError(t, err)
	_, err = testClient.Put(context.Background(), "/registry/configmaps/"+ns+"/p", string(asJSON))
	require.NoError(t, err)
	got, err := testH.Get(context.Background(), &resourcev1.GetRequest{Ref: ref(cmResource, ns, "p")})
	require.NoError(t, err)
	out := &corev1.ConfigMap{}
	decode(t, got.GetBody(), out)
	assert.Equal(t, "from-json", out.Data["a"])

	h := NewHandler(testScheme, testSet, testStore, stopAll)
	require.NoError(t, h.SetStorageMediaType(MediaJSON))
	require.Error(t, h.SetStorageMediaType("application/cbor"))
	data, err := h.encodeStored(cmResource, out)
	require.NoError(t, err)
	assert.True(t, json.Valid(data), "%q", data)
	assert.Contains(t, string(data), `"kind":"ConfigMap","apiVersion":"v1"`)
	back, err := decodeStoredForm(cmResource, data)
	require.NoError(t, err)
	assert.Equal(t, "from-json", back.(*corev1.ConfigMap).Data["a"])

	// YAML when asked, read back as any.
	require.NoError(t, h.SetStorageMediaType(MediaYAML))
	data, err = h.encodeStored(cmResource, out)
	require.NoError(t, err)
	assert.Contains(t, string(data), "kind: ConfigMap\n")
	back, err = decodeStoredForm(cmResource, data)
	require.NoError(t, err)
	assert.Equal(t, "from-json", back.(*corev1.ConfigMap).Data["a"])

	// A custom resource has no protobuf form: JSON whatever the media type.
	w := &unstructured.Unstructured{}
	require.NoError(t, w.UnmarshalJSON([]byte(widgetJSON("w", 1))))
	data, err = testH.encodeStored(widgetResource, w)
	require.NoError(t, err)
	assert.True(t, json.Valid(data), "%q", data)
}

// A kind kept in another version of its group is stored in that version and read back in the
// served one, and what was stored in the served version (an earlier apichain) reads too.
func TestStoredInVersion(t *testing.T) {
	type v1 = corev1.ConfigMap
	stored := schema.GroupVersion{Version: "v1beta9"}
	r := &Resource{GroupVersion: corev1.SchemeGroupVersion, Name: "configmaps", Kind: "ConfigMap", Namespaced: true, New: Of[v1](),
		Convert: StoredInVersion(stored, Of[v1](), Of[v1]())}
	in := &v1{Data: map[string]string{}}
	in.Name = "x"
	data, err := testH.encodeStored(r, in)
	require.NoError(t, err)
	var u runtime.Unknown
	require.NoError(t, u.Unmarshal(data[4:]))
	assert.Equal(t, "v1beta9", u.APIVersion)
	out, err := decodeStoredForm(r, data)
	require.NoError(t, err)
	assert.Equal(t, "x", out.(*v1).Name)

	old, err := json.Marshal(&v1{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, Data: map[string]string{"k": "v"}})
	require.NoError(t, err)
	out, err = decodeStoredForm(r, old)
	require.NoError(t, err)
	assert.Equal(t, "v", out.(*v1).Data["k"])
}

// Whatever etcd holds under a key, reading it is an object or an error (a corrupt object's
// 500), never a panic: protobuf envelopes, JSON, and garbage alike.
func FuzzDecodeStored(f *testing.F) {
	cm := configMap("f", map[string]string{"k": "v"})
	for _, media := range []string{MediaProtobuf, MediaJSON} {
		h := &Handler{storageMedia: media}
		data, err := h.encodeStored(cmResource, cm)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("k8s\x00\x0a\x02\x0a\x00"))
	f.Add([]byte(`{"apiVersion":"v1","kind":"ConfigMap","data":{"k":1}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, r := range []*Resource{cmResource, podResource, widgetResource} {
			_, _ = decodeStoredForm(r, data)
		}
	})
}

// A controller's watch learns an object is being deleted from its stored form without
// decoding it, in either encoding.
func TestMarkedForDeletion(t *testing.T) {
	for _, media := range []string{MediaProtobuf, MediaJSON} {
		h := &Handler{storageMedia: media}
		cm := configMap("d", map[string]string{"deletionTimestamp": "not metadata"})
		data, err := h.encodeStored(cmResource, cm)
		require.NoError(t, err)
		if media == MediaProtobuf {
			assert.False(t, markedForDeletion(data), media) // a data key by that name is no metadata
		}
		now := metav1.Now()
		cm.DeletionTimestamp = &now
		data, err = h.encodeStored(cmResource, cm)
		require.NoError(t, err)
		assert.True(t, markedForDeletion(data), media)
	}
	assert.False(t, markedForDeletion([]byte("k8s\x00\xff")), "garbage is not marked")
}
