package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

func TestGetNotFoundStatus(t *testing.T) {
	ns := newNamespace(t)
	_, err := testH.Get(context.Background(), &resourcev1.GetRequest{Ref: ref(cmResource, ns, "missing")})
	st := requireStatus(t, err, 404, metav1.StatusReasonNotFound)
	assert.Equal(t, "v1", st.APIVersion)
	assert.Equal(t, `configmaps "missing" not found`, st.Message)
	require.NotNil(t, st.Details)
	assert.Equal(t, "missing", st.Details.Name)
	assert.Equal(t, "configmaps", st.Details.Kind)
	assert.Empty(t, st.Details.Group)

	_, err = testH.Get(context.Background(), &resourcev1.GetRequest{Ref: ref(deployResource, ns, "missing")})
	st = requireStatus(t, err, 404, metav1.StatusReasonNotFound)
	assert.Equal(t, "apps", st.Details.Group)
	assert.Equal(t, "deployments", st.Details.Kind)
}

func TestGetSubresources(t *testing.T) {
	ns := newNamespace(t)
	create(t, cmResource, ns, configMap("cm", nil))
	// configmaps have no status or scale subresource.
	for _, sub := range []string{"status", "scale", "bogus"} {
		_, err := testH.Get(context.Background(), &resourcev1.GetRequest{Ref: subRef(cmResource, ns, "cm", sub)})
		requireStatus(t, err, 404, metav1.StatusReasonNotFound)
	}
	d := create(t, deployResource, ns, deployment("web", 4))
	resp, err := testH.Get(context.Background(), &resourcev1.GetRequest{Ref: subRef(deployResource, ns, "web", "status")})
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(resp.GetBody().GetData(), &got))
	assert.Equal(t, "Deployment", got["kind"])

	resp, err = testH.Get(context.Background(), &resourcev1.GetRequest{Ref: subRef(deployResource, ns, "web", "scale")})
	require.NoError(t, err)
	var sc struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata"`
		Spec              struct{ Replicas int32 }
		Status            struct {
			Replicas int32
			Selector string
		}
	}
	require.NoError(t, json.Unmarshal(resp.GetBody().GetData(), &sc))
	assert.Equal(t, "Scale", sc.Kind)
	assert.Equal(t, "autoscaling/v1", sc.APIVersion)
	assert.EqualValues(t, 4, sc.Spec.Replicas)
	assert.Equal(t, "app=web", sc.Status.Selector)
	assert.Equal(t, d.ResourceVersion, sc.ResourceVersion)
}

func TestGetAcceptNegotiation(t *testing.T) {
	ns := newNamespace(t)
	cm := configMap("neg", map[string]string{"a": "1", "b": "2"})
	cm.Labels = map[string]string{"l": "v"}
	created := create(t, cmResource, ns, cm)

	const tableJSON = "application/json;as=Table;g=meta.k8s.io;v=v1"
	tests := []struct {
		accept      string
		pretty      bool
		contentType string
		check       func(t *testing.T, data []byte)
	}{
		{accept: "", contentType: MediaJSON, check: func(t *testing.T, data []byte) {
			got := &corev1.ConfigMap{}
			require.NoError(t, json.Unmarshal(data, got))
			assert.Equal(t, created.UID, got.UID)
			assert.Equal(t, "ConfigMap", got.Kind)
		}},
		{accept: "*/*", contentType: MediaJSON},
		{accept: "application/json", pretty: true, contentType: MediaJSON, check: func(t *testing.T, data []byte) {
			assert.Contains(t, string(data), "\n    ", "pretty JSON is indented")
		}},
		{accept: MediaYAML, contentType: MediaYAML, check: func(t *testing.T, data []byte) {
			got := &corev1.ConfigMap{}
			require.NoError(t, yaml.Unmarshal(data, got))
			assert.Equal(t, "neg", got.Name)
			assert.Equal(t, "1", got.Data["a"])
			assert.Contains(t, string(data), "kind: ConfigMap")
		}},
		{accept: MediaProtobuf, contentType: MediaProtobuf, check: func(t *testing.T, data []byte) {
			assert.True(t, strings.HasPrefix(string(data), "k8s\x00"))
			got := &corev1.ConfigMap{}
			decode(t, &resourcev1.Body{ContentType: MediaProtobuf, Data: data}, got)
			assert.Equal(t, created.UID, got.UID)
		}},
		{accept: "text/html, application/yaml;q=0.9", contentType: MediaYAML},
		{accept: "application/vnd.kubernetes.protobuf, application/json", contentType: MediaProtobuf},
		{accept: tableJSON + ", application/json", contentType: MediaJSON, check: func(t *testing.T, data []byte) {
			tbl := &metav1.Table{}
			require.NoError(t, json.Unmarshal(data, tbl))
			assert.Equal(t, "Table", tbl.Kind)
			assert.Equal(t, "meta.k8s.io/v1", tbl.APIVersion)
			var cols []string
			for _, c := range tbl.ColumnDefinitions {
				cols = append(cols, c.Name)
			}
			assert.Equal(t, []string{"Name", "Data", "Age"}, cols)
			assert.Equal(t, created.ResourceVersion, tbl.ResourceVersion)
			require.Len(t, tbl.Rows, 1)
			require.Len(t, tbl.Rows[0].Cells, 3)
			assert.Equal(t, "neg", tbl.Rows[0].Cells[0])
			assert.EqualValues(t, 2, tbl.Rows[0].Cells[1])
			pom := &metav1.PartialObjectMetadata{}
			require.NoError(t, json.Unmarshal(tbl.Rows[0].Object.Raw, pom))
			assert.Equal(t, "PartialObjectMetadata", pom.Kind)
			assert.Equal(t, "meta.k8s.io/v1", pom.APIVersion)
			assert.Equal(t, created.UID, pom.UID)
			assert.Equal(t, map[string]string{"l": "v"}, pom.Labels)
		}},
		{accept: "application/yaml;as=Table;g=meta.k8s.io;v=v1", contentType: MediaYAML, check: func(t *testing.T, data []byte) {
			assert.Contains(t, string(data), "kind: Table")
		}},
		{accept: "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", contentType: MediaJSON, check: func(t *testing.T, data []byte) {
			pom := &metav1.PartialObjectMetadata{}
			require.NoError(t, json.Unmarshal(data, pom))
			assert.Equal(t, "PartialObjectMetadata", pom.Kind)
			assert.Equal(t, "meta.k8s.io/v1", pom.APIVersion)
			assert.Equal(t, "neg", pom.Name)
			assert.NotContains(t, string(data), `"data"`)
		}},
		{accept: "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", contentType: MediaProtobuf, check: func(t *testing.T, data []byte) {
			pom := &metav1.PartialObjectMetadata{}
			decode(t, &resourcev1.Body{ContentType: MediaProtobuf, Data: data}, pom)
			assert.Equal(t, created.UID, pom.UID)
		}},
		// A conversion kube does not serve is skipped like an unknown media type.
		{accept: "application/json;as=Table;g=example.com;v=v1, application/yaml", contentType: MediaYAML},
		// kube serves Tables only as JSON or YAML; a protobuf Table clause is not acceptable.
		{accept: "application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1, application/json", contentType: MediaJSON, check: func(t *testing.T, data []byte) {
			assert.Contains(t, string(data), `"kind":"ConfigMap"`)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.accept, func(t *testing.T) {
			resp, err := testH.Get(context.Background(), &resourcev1.GetRequest{Ref: ref(cmResource, ns, "neg"),
				Encoding: &resourcev1.Encoding{Accept: tc.accept, Pretty: tc.pretty}})
			require.NoError(t, err)
			assert.Equal(t, tc.contentType, resp.GetBody().GetContentType())
			if tc.check != nil {
				tc.check(t, resp.GetBody().GetData())
			}
		})
	}

	for _, accept := range []string{
		"text/html",
		"application/xml, text/plain",
		"application/json;as=Table;g=meta.k8s.io;v=v2",
		"application/json;as=Deployment;g=meta.k8s.io;v=v1",
		"application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1",
		";;;",
	} {
		t.Run("not acceptable "+accept, func(t *testing.T) {
			_, err := testH.Get(context.Background(), &resourcev1.GetRequest{Ref: ref(cmResource, ns, "neg"),
				Encoding: &resourcev1.Encoding{Accept: accept}})
			requireStatus(t, err, 406, metav1.StatusReasonNotAcceptable)
		})
	}
}

// GET's resourceVersion, as kube's "semantics for get": "" is the most recent (a quorum read
// from etcd); "0" (any) and a number (not older than it) come from the watch cache when it is
// on and synced, which waits up to 3s for that version, and from etcd otherwise. A version not
// reached yet is kube's 504 with the ResourceVersionTooLarge cause; garbage is kube's 400 from
// etcd and its 422 from the cache. A GET has no 410: nothing is too old for "not older than".
func TestGetResourceVersion(t *testing.T) {
	readers(t, func(t *testing.T, h *Handler) {
		ctx := context.Background()
		cached := h == testCachedH
		ns := newNamespace(t)
		created := create(t, deployResource, ns, deployment("rv", 1))
		_, err := patch(deployResource, ns, "rv", mergePatchType, `{"metadata":{"labels":{"v":"2"}}}`)
		require.NoError(t, err)
		latest := get[*appsv1.Deployment](t, deployResource, ns, "rv").ResourceVersion
		if cached {
			// Once the cache holds the latest write, mark its copy: what shows the mark came
			// from the cache.
			_, err := h.Get(ctx, &resourcev1.GetRequest{Ref: ref(deployResource, ns, "rv"), ResourceVersion: latest})
			require.NoError(t, err)
			markCached(t, h, deployResource, ns, "rv")
		}
		future := currentRevision(t) + 1000
		invalid := `resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax`
		// kube's etcd store answers garbage with 400 and a version ahead with "retry after 0";
		// its watch cache hands back the parse error as is (422) and says "retry after 1".
		badCode, badReason, badMessage, retryAfter := int32(400), metav1.StatusReasonBadRequest, "invalid resource version: "+invalid, int32(0)
		if cached {
			badCode, badReason, badMessage, retryAfter = 422, metav1.StatusReasonInvalid, invalid, 1
		}

		tests := []struct {
			name, rv, sub, obj string
			fromCache          bool // served by the cache when the handler has one
			etcdOnly           bool // the cache would answer the same after its 3s wait
			code               int32
			reason             metav1.StatusReason
			message            string // the error's message, or its prefix for a timeout
		}{
			{name: "most recent", rv: ""},
			{name: "any", rv: "0", fromCache: true},
			{name: "exact existing version", rv: latest, fromCache: true},
			{name: "older version", rv: created.ResourceVersion, fromCache: true},
			{name: "older than anything stored", rv: "1", fromCache: true},
			{name: "status", rv: latest, sub: "status", fromCache: true},
			{name: "scale", rv: latest, sub: "scale"},
			{name: "missing object", rv: "0", obj: "missing", code: 404, reason: metav1.StatusReasonNotFound,
				message: `deployments.apps "missing" not found`},
			{name: "future version", rv: strconv.FormatInt(future, 10), code: 504, reason: metav1.StatusReasonTimeout,
				message: fmt.Sprintf("Timeout: Too large resource version: %d, current: ", future)},
			{name: "future version of a missing object", rv: strconv.FormatInt(future, 10), obj: "missing", etcdOnly: true,
				code: 504, reason: metav1.StatusReasonTimeout, message: fmt.Sprintf("Timeout: Too large resource version: %d, current: ", future)},
			{name: "garbage", rv: "abc", code: badCode, reason: badReason, message: badMessage},
			{name: "negative", rv: "-1", code: badCode, reason: badReason},
		}
		for _, tc := range tests {
			if tc.etcdOnly && cached {
				continue // the cache gives the same answer, after the 3 s wait "future version" already pays
			}
			t.Run(tc.name, func(t *testing.T) {
				obj := tc.obj
				if obj == "" {
					obj = "rv"
				}
				resp, err := h.Get(ctx, &resourcev1.GetRequest{Ref: subRef(deployResource, ns, obj, tc.sub), ResourceVersion: tc.rv})
				if tc.code != 0 {
					st := requireStatus(t, err, tc.code, tc.reason)
					assert.True(t, strings.HasPrefix(st.Message, tc.message), "message %q", st.Message)
					if tc.code == 504 {
						assert.Equal(t, []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}},
							st.Details.Causes)
						assert.Equal(t, retryAfter, st.Details.RetryAfterSeconds)
					}
					return
				}
				require.NoError(t, err)
				got := &metav1.PartialObjectMetadata{}
				require.NoError(t, json.Unmarshal(resp.GetBody().GetData(), got))
				assert.Equal(t, latest, got.ResourceVersion)
				assert.Equal(t, cached && tc.fromCache, got.Annotations["test/served-by"] == "cache")
			})
		}

		if cached {
			// A version the cache has not seen is waited for: the write that makes it
			// lands during the wait and the GET answers with it.
			next := strconv.FormatInt(currentRevision(t)+1, 10)
			got := make(chan *resourcev1.GetResponse, 1)
			go func() {
				resp, err := h.Get(ctx, &resourcev1.GetRequest{Ref: ref(deployResource, ns, "rv"), ResourceVersion: next})
				assert.NoError(t, err)
				got <- resp
			}()
			_, err := patch(deployResource, ns, "rv", mergePatchType, `{"metadata":{"labels":{"v":"3"}}}`)
			require.NoError(t, err)
			select {
			case resp := <-got:
				d := &appsv1.Deployment{}
				decode(t, resp.GetBody(), d)
				assert.Equal(t, "3", d.Labels["v"])
			case <-time.After(waitFor):
				t.Fatal("no answer within", waitFor)
			}
		}
	})
}

// markCached annotates the watch cache's copy of an object (only), so a test tells what the
// cache served from what etcd did.
func markCached(t *testing.T, h *Handler, r *Resource, namespace, name string) {
	t.Helper()
	c := h.cache(r)
	c.mu.Lock()
	defer c.mu.Unlock()
	k := key(r, namespace, name)
	e, ok := c.objects.Get(cacheEntry{key: k})
	require.True(t, ok, "%s is cached", k)
	marked := e.obj.DeepCopyObject()
	acc, err := meta.Accessor(marked)
	require.NoError(t, err)
	acc.SetAnnotations(map[string]string{"test/served-by": "cache"})
	c.objects.ReplaceOrInsert(cacheEntry{key: k, obj: marked, enc: itemEncodingsOf()})
}
