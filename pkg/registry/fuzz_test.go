package registry

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/rpcstatus"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The fuzz targets run against the real handler and the package's etcd. Each iteration cleans
// up what it created, so the store stays small however long a fuzzer runs.

var (
	fuzzNSOnce sync.Once
	fuzzNS     string
	fuzzSeq    atomic.Int64
)

func fuzzNamespace(t testing.TB) string {
	fuzzNSOnce.Do(func() { fuzzNS = newNamespace(t) })
	return fuzzNS
}

// requireClientError fails on anything but success or a client (4xx) error, and on errors
// that carry no kube Status.
func requireClientError(t *testing.T, err error, allowed ...int32) {
	t.Helper()
	if err == nil {
		return
	}
	require.False(t, rpcstatus.IsNotServed(err), "not served: %v", err)
	st := rpcstatus.ToKube(err)
	require.Equal(t, "Status", st.Kind, "%v", err)
	if len(allowed) > 0 {
		for _, code := range allowed {
			if st.Code == code {
				return
			}
		}
		t.Fatalf("status %d not in %v: %s", st.Code, allowed, st.Message)
	}
	require.True(t, st.Code >= 400 && st.Code < 500, "status %d (%s): %s", st.Code, st.Reason, st.Message)
}

// removeObject takes an object away whatever its finalizers.
func removeObject(t *testing.T, r *Resource, ns, name string) {
	t.Helper()
	ctx := context.Background()
	_, err := testH.Patch(ctx, &resourcev1.PatchRequest{Ref: ref(r, ns, name),
		Body: &resourcev1.Body{ContentType: mergePatchType, Data: []byte(`{"metadata":{"finalizers":null}}`)}})
	if err != nil && rpcstatus.ToKube(err).Code == 404 {
		return
	}
	require.NoError(t, err)
	_, err = testH.Delete(ctx, &resourcev1.DeleteRequest{Ref: ref(r, ns, name)})
	if err != nil {
		require.EqualValues(t, 404, rpcstatus.ToKube(err).Code, "%v", err)
	}
	_, err = testH.Get(ctx, &resourcev1.GetRequest{Ref: ref(r, ns, name)})
	require.Error(t, err, "%s %s/%s survived its cleanup", r.Name, ns, name)
}

var fuzzContentTypes = []string{MediaJSON, MediaYAML, MediaProtobuf, "", "text/plain", "application/json; charset=utf-8", "application/merge-patch+json", ";;"}

func FuzzDecodeBody(f *testing.F) {
	protoInfo, _ := runtime.SerializerInfoForMediaType(testScheme.Codecs.SupportedMediaTypes(), MediaProtobuf)
	seed := configMap("seed", map[string]string{"k": "v"})
	seed.Labels = map[string]string{"a": "b"}
	seed.Finalizers = []string{"example.com/f"}
	js, _ := json.Marshal(seed)
	pb, _ := runtime.Encode(testScheme.Codecs.EncoderForVersion(protoInfo.Serializer, corev1.SchemeGroupVersion), seed)
	f.Add(js, uint8(0), false)
	f.Add(js, uint8(0), true)
	f.Add([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  generateName: g-\ndata:\n  a: b\n"), uint8(1), true)
	f.Add(pb, uint8(2), false)
	f.Add([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"other"}}`), uint8(0), false)
	f.Add([]byte(`{"metadata":{"name":"x","creationTimestamp":"yesterday"}}`), uint8(3), false)
	f.Add([]byte(`{"metadata":{"name":"Bad Name"},"data":{"bad key":"v"}}`), uint8(4), false)
	f.Add([]byte("k8s\x00\x0a\x02\x08\x01"), uint8(2), false)
	f.Add([]byte("&a [*a, *a]"), uint8(1), false)
	f.Add([]byte(`null`), uint8(0), false)

	f.Fuzz(func(t *testing.T, data []byte, ct uint8, strict bool) {
		ns := fuzzNamespace(t)
		opts := &resourcev1.WriteOptions{}
		if strict {
			opts.FieldValidation = "Strict"
		}
		resp, err := testH.Create(context.Background(), &resourcev1.CreateRequest{Ref: ref(cmResource, ns, ""),
			Body: &resourcev1.Body{ContentType: fuzzContentTypes[int(ct)%len(fuzzContentTypes)], Data: data}, Options: opts})
		requireClientError(t, err)
		if err != nil {
			return
		}
		created := &corev1.ConfigMap{}
		decode(t, resp.GetBody(), created)
		require.Equal(t, ns, created.Namespace)
		// What was stored reads back.
		got := get[*corev1.ConfigMap](t, cmResource, ns, created.Name)
		require.Equal(t, created.UID, got.UID)
		require.Equal(t, created.ResourceVersion, got.ResourceVersion)
		removeObject(t, cmResource, ns, created.Name)
	})
}

var fuzzPatchTypes = []string{jsonPatchType, mergePatchType, strategicPatchType, applyPatchType, "text/plain"}

func FuzzPatch(f *testing.F) {
	f.Add([]byte(`[{"op":"add","path":"/data/x","value":"y"}]`), uint8(0), uint8(0))
	f.Add([]byte(`[{"op":"copy","from":"/data","path":"/data/z"},{"op":"move","from":"/metadata/labels","path":"/data/q"}]`), uint8(0), uint8(1))
	f.Add([]byte(`[{"op":"test","path":"/metadata/resourceVersion","value":"1"}]`), uint8(0), uint8(0))
	f.Add([]byte(`[{"op":"replace","path":"/metadata/name","value":"other"}]`), uint8(0), uint8(0))
	f.Add([]byte(`{"data":{"a":null,"b":"c"},"metadata":{"labels":{"x":"y"},"finalizers":["example.com/f"]}}`), uint8(1), uint8(0))
	f.Add([]byte(`{"metadata":{"resourceVersion":"1"}}`), uint8(1), uint8(0))
	f.Add([]byte(`{"metadata":{"deletionTimestamp":"2020-01-01T00:00:00Z","uid":"x"}}`), uint8(2), uint8(0))
	f.Add([]byte(`{"spec":{"template":{"spec":{"containers":[{"name":"main","$patch":"delete"}]}}}}`), uint8(2), uint8(1))
	f.Add([]byte(`{"spec":{"replicas":-5,"selector":{"matchLabels":{"$retainKeys":["a"]}}},"status":{"replicas":3}}`), uint8(2), uint8(1))
	f.Add([]byte(`{"$setElementOrder/finalizers":[{"a":1}],"metadata":{"$patch":"replace"}}`), uint8(2), uint8(0))
	f.Add([]byte("apiVersion: v1\nkind: ConfigMap\ndata:\n  a: b\n"), uint8(3), uint8(0))
	f.Add([]byte(`{"data":"x"}`), uint8(1), uint8(2))

	f.Fuzz(func(t *testing.T, patchData []byte, pt uint8, target uint8) {
		ns := fuzzNamespace(t)
		ctx := context.Background()
		name := fmt.Sprintf("fp-%d", fuzzSeq.Add(1))
		r := cmResource
		var sub string
		switch target % 4 {
		case 0, 2:
			cm := configMap(name, map[string]string{"a": "1", "b": "2"})
			cm.Labels = map[string]string{"l": "v"}
			create(t, cmResource, ns, cm)
		case 1, 3:
			r = deployResource
			d := deployment(name, 2)
			d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: "side", Image: "envoy"})
			create(t, deployResource, ns, d)
			if target%4 == 3 {
				sub = "status"
			}
		}
		if target%4 == 2 {
			sub = "scale" // configmaps have none: 404
		}
		defer removeObject(t, r, ns, name)

		req := &resourcev1.PatchRequest{Ref: subRef(r, ns, name, sub),
			Body:    &resourcev1.Body{ContentType: fuzzPatchTypes[int(pt)%len(fuzzPatchTypes)], Data: patchData},
			Options: &resourcev1.WriteOptions{FieldManager: "fuzz"}}
		if target&4 != 0 {
			req.Options.FieldValidation = "Strict"
		}
		resp, err := testH.Patch(ctx, req)
		requireClientError(t, err)
		if err != nil {
			return
		}
		out := &metav1.PartialObjectMetadata{}
		require.NoError(t, json.Unmarshal(resp.GetBody().GetData(), out))
		require.Equal(t, name, out.Name)
		// The stored object still decodes.
		if _, err := testH.Get(ctx, &resourcev1.GetRequest{Ref: ref(r, ns, name)}); err != nil {
			require.EqualValues(t, 404, rpcstatus.ToKube(err).Code, "%v", err) // deleted by removing its last finalizer
		}
	})
}

func FuzzSelectors(f *testing.F) {
	for _, s := range [][2]string{
		{"", ""}, {"app=a", ""}, {"app in (a,b),!x", "metadata.name=x"}, {"a notin ()", ""}, {"a=(", ""},
		{"", "metadata.namespace!=y,metadata.name==z"}, {"", "data.x=y"}, {"", `metadata.name=a\,b`}, {"", "metadata.name"},
		{"x.example.com/key-1=v_1.2", ""}, {"a>1", ""}, {"", "status.phase=Terminating"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, labelSel, fieldSel string) {
		ns := fuzzNamespace(t)
		fuzzSeedObjects.Do(func() {
			for i := range 3 {
				cm := configMap(fmt.Sprintf("sel-%d", i), nil)
				cm.Labels = map[string]string{"app": fmt.Sprint(i)}
				create(t, cmResource, ns, cm)
			}
		})
		opts := &resourcev1.ListOptions{LabelSelector: labelSel, FieldSelector: fieldSel}
		_, err := testH.List(context.Background(), &resourcev1.ListRequest{Ref: ref(cmResource, ns, ""), Options: opts, PageSize: 2})
		requireClientError(t, err, 400)
		// Namespaces (cluster-scoped, with a kind field) parse the same way.
		_, err = testH.List(context.Background(), &resourcev1.ListRequest{Ref: ref(nsResource, "", ""), Options: opts, PageSize: 1})
		requireClientError(t, err, 400)
		// A dry-run delete collection selects the same way and deletes nothing.
		_, err = testH.DeleteCollection(context.Background(), &resourcev1.DeleteCollectionRequest{Ref: ref(cmResource, ns, ""),
			ListOptions: opts, Options: &resourcev1.DeleteOptions{DryRun: []string{"All"}}})
		requireClientError(t, err, 400)
	})
}

var fuzzSeedObjects sync.Once

func FuzzContinueToken(f *testing.F) {
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	f.Add(encodeContinue(5, "/configmaps/ns/a", "/configmaps/ns/"))
	f.Add(enc(`{"v":"meta.k8s.io/v1","rv":1,"start":"a"}`))
	f.Add(enc(`{"v":"meta.k8s.io/v1","rv":9223372036854775807,"start":"a"}`))
	f.Add(enc(`{"v":"meta.k8s.io/v1","rv":-1,"start":"a"}`))
	f.Add(enc(`{"v":"meta.k8s.io/v1","rv":3,"start":"../../secrets/ns/x"}`))
	f.Add(enc(`{"v":"meta.k8s.io/v1","rv":3,"start":"a\u0000b"}`))
	f.Add(enc(`{"v":"meta.k8s.io/v1","rv":1e3,"start":"a"}`))
	f.Add("")
	f.Add("====")
	const keyPrefix = "/configmaps/ns/"
	f.Fuzz(func(t *testing.T, token string) {
		rev, start, err := decodeContinue(token, keyPrefix)
		if err != nil {
			requireClientError(t, toGRPC(err), 400)
		} else {
			require.Positive(t, rev)
			require.True(t, strings.HasPrefix(start, keyPrefix))
			require.Greater(t, len(start), len(keyPrefix))
			require.NotContains(t, start, "..")
		}
		if token == "" {
			return
		}
		_, err = testH.List(context.Background(), &resourcev1.ListRequest{Ref: ref(cmResource, fuzzNamespace(t), ""), PageSize: 1, PageToken: token})
		// 410: the token's revision is compacted; 504: etcd has not reached it.
		requireClientError(t, err, 400, 410, 504)
	})
}
