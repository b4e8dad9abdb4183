package registry

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/rpcstatus"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

func TestCreateSetsSystemFields(t *testing.T) {
	ns := newNamespace(t)
	before := time.Now().Truncate(time.Second)
	cm := configMap("", map[string]string{"k": "v"})
	cm.GenerateName = "gen-"
	cm.UID = "client-set-uid"
	cm.ResourceVersion = ""
	cm.Generation = 7
	cm.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	cm.SelfLink = "/bogus"

	created := create(t, cmResource, ns, cm)

	assert.Regexp(t, `^gen-[bcdfghjklmnpqrstvwxz2456789]{5}$`, created.Name)
	assert.Equal(t, ns, created.Namespace)
	_, err := uuid.Parse(string(created.UID))
	assert.NoError(t, err, "uid %q is not a UUID", created.UID)
	assert.False(t, created.CreationTimestamp.Before(&metav1.Time{Time: before}), "creationTimestamp %v", created.CreationTimestamp)
	assert.False(t, created.CreationTimestamp.After(time.Now()))
	assert.Equal(t, strconv.FormatInt(currentRevision(t), 10), created.ResourceVersion, "resourceVersion is the etcd revision")
	assert.Zero(t, created.Generation, "a kind without spec has no generation")
	assert.Nil(t, created.DeletionTimestamp)
	assert.Empty(t, created.SelfLink)
	assert.Equal(t, map[string]string{"k": "v"}, created.Data)

	// The stored object reads back identically.
	got := get[*corev1.ConfigMap](t, cmResource, ns, created.Name)
	assert.Equal(t, created.UID, got.UID)
	assert.Equal(t, created.ResourceVersion, got.ResourceVersion)
	assert.Equal(t, "ConfigMap", got.Kind)
	assert.Equal(t, "v1", got.APIVersion)
}

func TestCreateKindWithSpec(t *testing.T) {
	ns := newNamespace(t)
	d := deployment("web", 3)
	d.Status.Replicas = 42 // status is the controllers'; a create clears it
	d.Generation = 9
	created := create(t, deployResource, ns, d)
	assert.EqualValues(t, 1, created.Generation, "a kind with spec starts at generation 1")
	assert.Zero(t, created.Status.Replicas, "status is reset on create")
	assert.EqualValues(t, 3, *created.Spec.Replicas)

	// PrepareForCreate defaults.
	d2 := deployment("defaulted", 0)
	d2.Spec.Replicas = nil
	created = create(t, deployResource, ns, d2)
	require.NotNil(t, created.Spec.Replicas)
	assert.EqualValues(t, 1, *created.Spec.Replicas)
}

func TestCreateClusterScopedIgnoresNamespace(t *testing.T) {
	n := &corev1.Node{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{Name: "node-" + strconv.FormatInt(nsCounter.Add(1), 10), Namespace: "ignored"}}
	created := create(t, nodeResource, "", n)
	assert.Empty(t, created.Namespace)
	got := get[*corev1.Node](t, nodeResource, "", created.Name)
	assert.Equal(t, created.UID, got.UID)
}

func TestCreateErrors(t *testing.T) {
	ns := newNamespace(t)
	create(t, cmResource, ns, configMap("exists", nil))

	body := func(obj any) *resourcev1.Body { return jsonBody(t, obj) }
	otherNS := configMap("other-ns", nil)
	otherNS.Namespace = "elsewhere"

	tests := []struct {
		name      string
		namespace string
		body      *resourcev1.Body
		opts      *resourcev1.WriteOptions
		code      int32
		reason    metav1.StatusReason
		check     func(t *testing.T, st *metav1.Status)
	}{
		{name: "already exists", namespace: ns, body: body(configMap("exists", nil)), code: 409, reason: metav1.StatusReasonAlreadyExists,
			check: func(t *testing.T, st *metav1.Status) {
				require.NotNil(t, st.Details)
				assert.Equal(t, "exists", st.Details.Name)
				assert.Equal(t, "configmaps", st.Details.Kind)
				assert.Equal(t, `configmaps "exists" already exists`, st.Message)
			}},
		{name: "namespace mismatch", namespace: ns, body: body(otherNS), code: 400, reason: metav1.StatusReasonBadRequest,
			check: func(t *testing.T, st *metav1.Status) { assert.Contains(t, st.Message, "does not match the namespace") }},
		{name: "invalid name", namespace: ns, body: body(configMap("Bad_Name", nil)), code: 422, reason: metav1.StatusReasonInvalid,
			check: func(t *testing.T, st *metav1.Status) {
				require.NotNil(t, st.Details)
				assert.Equal(t, "ConfigMap", st.Details.Kind)
				assert.Equal(t, "Bad_Name", st.Details.Name)
				require.NotEmpty(t, st.Details.Causes)
				assert.Equal(t, "metadata.name", st.Details.Causes[0].Field)
				assert.Equal(t, metav1.CauseTypeFieldValueInvalid, st.Details.Causes[0].Type)
			}},
		{name: "missing name", namespace: ns, body: body(configMap("", nil)), code: 422, reason: metav1.StatusReasonInvalid,
			check: func(t *testing.T, st *metav1.Status) {
				require.NotEmpty(t, st.Details.Causes)
				assert.Equal(t, "metadata.name", st.Details.Causes[0].Field)
				assert.Equal(t, metav1.CauseTypeFieldValueRequired, st.Details.Causes[0].Type)
			}},
		{name: "kind validation", namespace: ns, body: body(configMap("bad-key", map[string]string{"no spaces": "v"})), code: 422, reason: metav1.StatusReasonInvalid,
			check: func(t *testing.T, st *metav1.Status) {
				require.Len(t, st.Details.Causes, 1)
				assert.Equal(t, "data[no spaces]", st.Details.Causes[0].Field)
			}},
		{name: "resourceVersion set", namespace: ns, body: &resourcev1.Body{ContentType: MediaJSON,
			Data: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"rv","resourceVersion":"5"}}`)},
			code: 400, reason: metav1.StatusReasonBadRequest,
			check: func(t *testing.T, st *metav1.Status) {
				assert.Equal(t, "resourceVersion should not be set on objects to be created", st.Message)
			}},
		// kube validates before its storage looks at the resourceVersion.
		{name: "resourceVersion set on an invalid object", namespace: ns, body: &resourcev1.Body{ContentType: MediaJSON,
			Data: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"Bad_Name","resourceVersion":"5"}}`)},
			code: 422, reason: metav1.StatusReasonInvalid},
		{name: "strict unknown field", namespace: ns, opts: &resourcev1.WriteOptions{FieldValidation: "Strict"},
			body: &resourcev1.Body{ContentType: MediaJSON, Data: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"strict"},"bogus":1}`)},
			code: 400, reason: metav1.StatusReasonBadRequest,
			check: func(t *testing.T, st *metav1.Status) {
				assert.Equal(t, `ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "bogus"`, st.Message)
			}},
		{name: "strict duplicate field", namespace: ns, opts: &resourcev1.WriteOptions{FieldValidation: "Strict"},
			body: &resourcev1.Body{ContentType: MediaJSON, Data: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dup","name":"dup2"}}`)},
			code: 400, reason: metav1.StatusReasonBadRequest,
			check: func(t *testing.T, st *metav1.Status) { assert.Contains(t, st.Message, "duplicate field") }},
		{name: "strict unknown field in yaml", namespace: ns, opts: &resourcev1.WriteOptions{FieldValidation: "Strict"},
			body: &resourcev1.Body{ContentType: MediaYAML, Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\nbogus: 1\n")},
			code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "bad fieldValidation", namespace: ns, opts: &resourcev1.WriteOptions{FieldValidation: "Loud"},
			body: body(configMap("fv", nil)), code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "unknown content type", namespace: ns, body: &resourcev1.Body{ContentType: "text/plain", Data: []byte("hello")},
			code: 415, reason: metav1.StatusReasonUnsupportedMediaType},
		{name: "patch content type", namespace: ns, body: &resourcev1.Body{ContentType: "application/merge-patch+json", Data: []byte("{}")},
			code: 415, reason: metav1.StatusReasonUnsupportedMediaType},
		{name: "unparseable content type", namespace: ns, body: &resourcev1.Body{ContentType: "application/json; ===", Data: []byte("{}")},
			code: 415, reason: metav1.StatusReasonUnsupportedMediaType},
		{name: "empty body", namespace: ns, body: &resourcev1.Body{ContentType: MediaJSON}, code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "nil body", namespace: ns, code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "malformed json", namespace: ns, body: &resourcev1.Body{ContentType: MediaJSON, Data: []byte(`{"metadata":`)},
			code: 400, reason: metav1.StatusReasonBadRequest,
			check: func(t *testing.T, st *metav1.Status) {
				assert.Equal(t, `the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: unexpected end of JSON input ({"metadata":)`, st.Message)
			}},
		{name: "wrong kind", namespace: ns, body: &resourcev1.Body{ContentType: MediaJSON, Data: []byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"}}`)},
			code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "wrong group", namespace: ns, body: &resourcev1.Body{ContentType: MediaJSON, Data: []byte(`{"apiVersion":"apps/v1","kind":"ConfigMap","metadata":{"name":"s"}}`)},
			code: 400, reason: metav1.StatusReasonBadRequest},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rev := currentRevision(t)
			_, err := testH.Create(context.Background(), &resourcev1.CreateRequest{Ref: ref(cmResource, tc.namespace, ""), Body: tc.body, Options: tc.opts})
			st := requireStatus(t, err, tc.code, tc.reason)
			if tc.check != nil {
				tc.check(t, st)
			}
			assert.Equal(t, rev, currentRevision(t), "a failed create writes nothing")
		})
	}
}

func TestCreateStrictFieldValidationIgnoredByDefault(t *testing.T) {
	ns := newNamespace(t)
	data := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"lenient"},"bogus":1}`)
	for _, fv := range []string{"", "Ignore", "Warn"} {
		_, err := testH.Create(context.Background(), &resourcev1.CreateRequest{Ref: ref(cmResource, ns, ""),
			Body: &resourcev1.Body{ContentType: MediaJSON, Data: data}, Options: &resourcev1.WriteOptions{FieldValidation: fv, DryRun: []string{"All"}}})
		assert.NoError(t, err, "fieldValidation=%q", fv)
	}
}

func TestCreateDryRunWritesNothing(t *testing.T) {
	ns := newNamespace(t)
	rev := currentRevision(t)
	resp, err := testH.Create(context.Background(), &resourcev1.CreateRequest{Ref: ref(cmResource, ns, ""),
		Body: jsonBody(t, configMap("dry", map[string]string{"a": "b"})), Options: &resourcev1.WriteOptions{DryRun: []string{"All"}}})
	require.NoError(t, err)
	assert.EqualValues(t, 201, resp.GetCode())
	out := &corev1.ConfigMap{}
	decode(t, resp.GetBody(), out)
	assert.Equal(t, "dry", out.Name)
	assert.NotEmpty(t, out.UID, "dry run still fills system fields")
	assert.Empty(t, out.ResourceVersion)

	assert.Equal(t, rev, currentRevision(t), "dry run wrote to etcd")
	_, err = testH.Get(context.Background(), &resourcev1.GetRequest{Ref: ref(cmResource, ns, "dry")})
	requireStatus(t, err, 404, metav1.StatusReasonNotFound)
}

func TestCreateBodyEncodings(t *testing.T) {
	ns := newNamespace(t)
	protoInfo, ok := runtime.SerializerInfoForMediaType(testScheme.Codecs.SupportedMediaTypes(), MediaProtobuf)
	require.True(t, ok)

	encode := map[string]func(cm *corev1.ConfigMap) []byte{
		MediaJSON: func(cm *corev1.ConfigMap) []byte { return jsonBody(t, cm).Data },
		MediaYAML: func(cm *corev1.ConfigMap) []byte {
			data, err := yaml.Marshal(cm)
			require.NoError(t, err)
			return data
		},
		MediaProtobuf: func(cm *corev1.ConfigMap) []byte {
			data, err := runtime.Encode(testScheme.Codecs.EncoderForVersion(protoInfo.Serializer, corev1.SchemeGroupVersion), cm)
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(string(data), "k8s\x00"))
			return data
		},
		MediaJSON + "; charset=utf-8": func(cm *corev1.ConfigMap) []byte { return jsonBody(t, cm).Data },
		"":                            func(cm *corev1.ConfigMap) []byte { return jsonBody(t, cm).Data }, // no content type: JSON
	}
	i := 0
	for ct, enc := range encode {
		i++
		name := "enc-" + strconv.Itoa(i)
		t.Run(ct, func(t *testing.T) {
			cm := configMap(name, map[string]string{"format": ct})
			cm.Labels = map[string]string{"via": "body"}
			resp, err := testH.Create(context.Background(), &resourcev1.CreateRequest{Ref: ref(cmResource, ns, ""),
				Body: &resourcev1.Body{ContentType: ct, Data: enc(cm)}})
			require.NoError(t, err)
			got := get[*corev1.ConfigMap](t, cmResource, ns, name)
			assert.Equal(t, map[string]string{"format": ct}, got.Data)
			assert.Equal(t, map[string]string{"via": "body"}, got.Labels)
			assert.Equal(t, MediaJSON, resp.GetBody().GetContentType(), "the response defaults to JSON")
		})
	}
}

func TestCreateDeploymentProtobuf(t *testing.T) {
	ns := newNamespace(t)
	protoInfo, _ := runtime.SerializerInfoForMediaType(testScheme.Codecs.SupportedMediaTypes(), MediaProtobuf)
	data, err := runtime.Encode(testScheme.Codecs.EncoderForVersion(protoInfo.Serializer, appsv1.SchemeGroupVersion), deployment("pb", 2))
	require.NoError(t, err)
	resp, err := testH.Create(context.Background(), &resourcev1.CreateRequest{Ref: ref(deployResource, ns, ""),
		Body: &resourcev1.Body{ContentType: MediaProtobuf, Data: data}, Encoding: &resourcev1.Encoding{Accept: MediaProtobuf}})
	require.NoError(t, err)
	assert.Equal(t, MediaProtobuf, resp.GetBody().GetContentType())
	out := &appsv1.Deployment{}
	decode(t, resp.GetBody(), out)
	assert.EqualValues(t, 2, *out.Spec.Replicas)
	assert.Equal(t, "main", out.Spec.Template.Spec.Containers[0].Name)
}

func TestNotServed(t *testing.T) {
	_, err := testH.Get(context.Background(), &resourcev1.GetRequest{Ref: &resourcev1.ResourceRef{Version: "v1", Resource: "widgets", Name: "x"}})
	require.Error(t, err)
	assert.True(t, rpcstatus.IsNotServed(err))
	// A namespaced resource named without a namespace is a 404.
	_, err = testH.Get(context.Background(), &resourcev1.GetRequest{Ref: ref(cmResource, "", "x")})
	requireStatus(t, err, 404, metav1.StatusReasonNotFound)
}

// kube's dry-run create never reaches its storage's resourceVersion check.
func TestDryRunCreateIgnoresResourceVersion(t *testing.T) {
	ns := newNamespace(t)
	rev := currentRevision(t)
	resp, err := testH.Create(context.Background(), &resourcev1.CreateRequest{Ref: ref(cmResource, ns, ""),
		Body:    &resourcev1.Body{ContentType: MediaJSON, Data: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dry","resourceVersion":"5"}}`)},
		Options: &resourcev1.WriteOptions{DryRun: []string{"All"}}})
	require.NoError(t, err)
	assert.Equal(t, rev, currentRevision(t), "a dry run writes nothing")
	var got corev1.ConfigMap
	require.NoError(t, json.Unmarshal(resp.GetBody().GetData(), &got))
	assert.Equal(t, "5", got.ResourceVersion, "kube answers with the resourceVersion sent")
}

// An update whose only change is the times of its managed fields is no change (kube's
// IgnoreManagedFieldsTimestampsTransformer): a no-op apply of a field kube normalizes bumps the
// applier's time, and nothing is written for it.
func TestOnlyManagedFieldTimesChanged(t *testing.T) {
	at := func(sec int64) *metav1.Time { tm := metav1.Unix(sec, 0); return &tm }
	cm := func(data string, sec int64) *corev1.ConfigMap {
		c := configMap("times", map[string]string{"k": data})
		c.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply,
			APIVersion: "v1", Time: at(sec), FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{"f:k":{}}}`)}}}
		return c
	}
	r := cmResource
	current := cm("v", 100)
	stored, err := testH.encodeStored(r, current)
	require.NoError(t, err)

	same, err := testH.encodeUnlessOnlyTimes(r, cm("v", 200), current, stored)
	require.NoError(t, err)
	assert.Equal(t, string(stored), string(same), "only the time changed: stored as it was")

	next := cm("w", 200)
	changed, err := testH.encodeUnlessOnlyTimes(r, next, current, stored)
	require.NoError(t, err)
	assert.NotEqual(t, string(stored), string(changed))
	assert.Equal(t, at(200).Unix(), next.ManagedFields[0].Time.Unix(), "a real change keeps its new time")
}
