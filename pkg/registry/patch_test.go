package registry

import (
	"context"
	"fmt"
	"strings"
	"testing"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func patch(r *Resource, namespace, name, pt, body string) (*resourcev1.PatchResponse, error) {
	return testH.Patch(context.Background(), &resourcev1.PatchRequest{Ref: ref(r, namespace, name),
		Body: &resourcev1.Body{ContentType: pt, Data: []byte(body)}})
}

func TestPatchTypes(t *testing.T) {
	ns := newNamespace(t)
	tests := []struct {
		pt    string
		patch string
	}{
		{jsonPatchType, `[{"op":"add","path":"/data/added","value":"yes"},{"op":"remove","path":"/data/gone"},{"op":"add","path":"/metadata/labels","value":{"l":"1"}}]`},
		{mergePatchType, `{"data":{"added":"yes","gone":null},"metadata":{"labels":{"l":"1"}}}`},
		{strategicPatchType, `{"data":{"added":"yes","gone":null},"metadata":{"labels":{"l":"1"}}}`},
		{strategicPatchType + "; charset=utf-8", `{"data":{"added":"yes","gone":null},"metadata":{"labels":{"l":"1"}}}`},
	}
	for i, tc := range tests {
		t.Run(tc.pt, func(t *testing.T) {
			name := fmt.Sprintf("p%d", i)
			created := create(t, cmResource, ns, configMap(name, map[string]string{"kept": "k", "gone": "g"}))
			resp, err := patch(cmResource, ns, name, tc.pt, tc.patch)
			require.NoError(t, err)
			assert.EqualValues(t, 200, resp.GetCode())
			out := &corev1.ConfigMap{}
			decode(t, resp.GetBody(), out)
			assert.Equal(t, map[string]string{"kept": "k", "added": "yes"}, out.Data)
			assert.Equal(t, map[string]string{"l": "1"}, out.Labels)
			assert.Equal(t, created.UID, out.UID)
			assert.NotEqual(t, created.ResourceVersion, out.ResourceVersion)
			assert.Equal(t, out.Data, get[*corev1.ConfigMap](t, cmResource, ns, name).Data)
		})
	}
}

// A strategic merge patch merges containers by name; a merge patch replaces the list.
func TestPatchStrategicVersusMerge(t *testing.T) {
	ns := newNamespace(t)
	for _, pt := range []string{strategicPatchType, mergePatchType} {
		t.Run(pt, func(t *testing.T) {
			name := strings.ReplaceAll(strings.TrimPrefix(pt, "application/"), "+json", "")
			d := deployment(name, 1)
			d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: "sidecar", Image: "envoy"})
			create(t, deployResource, ns, d)
			resp, err := patch(deployResource, ns, name, pt, `{"spec":{"template":{"spec":{"containers":[{"name":"main","image":"nginx"}]}}}}`)
			require.NoError(t, err)
			out := &appsv1.Deployment{}
			decode(t, resp.GetBody(), out)
			assert.EqualValues(t, 2, out.Generation, "a spec patch bumps generation")
			images := map[string]string{}
			for _, c := range out.Spec.Template.Spec.Containers {
				images[c.Name] = c.Image
			}
			if pt == strategicPatchType {
				assert.Equal(t, map[string]string{"main": "nginx", "sidecar": "envoy"}, images)
			} else {
				assert.Equal(t, map[string]string{"main": "nginx"}, images)
			}
		})
	}
}

func TestPatchErrors(t *testing.T) {
	ns := newNamespace(t)
	created := create(t, cmResource, ns, configMap("target", map[string]string{"a": "1"}))
	// Move the object on so created.ResourceVersion is stale.
	_, err := patch(cmResource, ns, "target", mergePatchType, `{"data":{"b":"2"}}`)
	require.NoError(t, err)
	current := get[*corev1.ConfigMap](t, cmResource, ns, "target")

	tests := []struct {
		name   string
		target string
		pt     string
		patch  string
		code   int32
		reason metav1.StatusReason
	}{
		{"malformed json patch", "target", jsonPatchType, `[{"op":`, 400, metav1.StatusReasonBadRequest},
		{"json patch not a list", "target", jsonPatchType, `{"op":"add"}`, 400, metav1.StatusReasonBadRequest},
		{"malformed merge patch", "target", mergePatchType, `{"data":`, 400, metav1.StatusReasonBadRequest},
		{"malformed strategic patch", "target", strategicPatchType, `{"data":`, 400, metav1.StatusReasonBadRequest},
		{"strategic patch not an object", "target", strategicPatchType, `[1,2]`, 400, metav1.StatusReasonBadRequest},
		{"json patch test fails", "target", jsonPatchType, `[{"op":"test","path":"/data/a","value":"wrong"}]`, 422, ""},
		{"json patch missing path", "target", jsonPatchType, `[{"op":"remove","path":"/data/nope"}]`, 422, ""},
		// json-patch panics on these; found by FuzzPatch (testdata/fuzz/FuzzPatch).
		{"json patch root replace without value", "target", jsonPatchType, `[{"op":"replace","path":""}]`, 422, ""},
		{"json patch root add without value", "target", jsonPatchType, `[{"op":"add","path":""}]`, 422, ""},
		{"unsupported patch type", "target", "application/xml", `<a/>`, 415, metav1.StatusReasonUnsupportedMediaType},
		{"apply without fieldManager", "target", "application/apply-patch+yaml", `{}`, 422, metav1.StatusReasonInvalid},
		{"json is not a patch type", "target", MediaJSON, `{}`, 415, metav1.StatusReasonUnsupportedMediaType},
		{"empty patch", "target", mergePatchType, ``, 400, metav1.StatusReasonBadRequest},
		{"stale resourceVersion merge", "target", mergePatchType, `{"metadata":{"resourceVersion":"` + created.ResourceVersion + `"},"data":{"c":"3"}}`, 409, metav1.StatusReasonConflict},
		{"stale resourceVersion strategic", "target", strategicPatchType, `{"metadata":{"resourceVersion":"` + created.ResourceVersion + `"},"data":{"c":"3"}}`, 409, metav1.StatusReasonConflict},
		{"stale resourceVersion json patch", "target", jsonPatchType, `[{"op":"replace","path":"/metadata/resourceVersion","value":"` + created.ResourceVersion + `"}]`, 409, metav1.StatusReasonConflict},
		{"rename", "target", mergePatchType, `{"metadata":{"name":"renamed"}}`, 400, metav1.StatusReasonBadRequest},
		// kube: the patched object is an invalid value of "patch"
		{"wrong field type", "target", mergePatchType, `{"data":"not a map"}`, 422, metav1.StatusReasonInvalid},
		{"invalid result", "target", mergePatchType, `{"data":{"bad key":"x"}}`, 422, metav1.StatusReasonInvalid},
		{"missing object", "missing", mergePatchType, `{"data":{"c":"3"}}`, 404, metav1.StatusReasonNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := patch(cmResource, ns, tc.target, tc.pt, tc.patch)
			requireStatus(t, err, tc.code, tc.reason)
			assert.Equal(t, current.ResourceVersion, get[*corev1.ConfigMap](t, cmResource, ns, "target").ResourceVersion, "a failed patch writes nothing")
		})
	}

	// The current resourceVersion is accepted as a precondition.
	_, err = patch(cmResource, ns, "target", mergePatchType, `{"metadata":{"resourceVersion":"`+current.ResourceVersion+`"},"data":{"c":"3"}}`)
	require.NoError(t, err)
	// And a JSON patch test on it works as one.
	now := get[*corev1.ConfigMap](t, cmResource, ns, "target")
	_, err = patch(cmResource, ns, "target", jsonPatchType, `[{"op":"test","path":"/metadata/resourceVersion","value":"`+now.ResourceVersion+`"},{"op":"add","path":"/data/d","value":"4"}]`)
	require.NoError(t, err)
}

func TestPatchStrictFieldValidation(t *testing.T) {
	ns := newNamespace(t)
	create(t, cmResource, ns, configMap("strict", nil))
	for _, pt := range []string{mergePatchType, strategicPatchType} {
		_, err := testH.Patch(context.Background(), &resourcev1.PatchRequest{Ref: ref(cmResource, ns, "strict"),
			Body: &resourcev1.Body{ContentType: pt, Data: []byte(`{"bogus":1}`)}, Options: &resourcev1.WriteOptions{FieldValidation: "Strict"}})
		if pt == strategicPatchType {
			// strategic merge drops fields the type does not know before decoding.
			if err != nil {
				requireStatus(t, err, 422, metav1.StatusReasonInvalid)
			}
			continue
		}
		// kube's answer: 422, the patched object an invalid value of "patch", the strict
		// decoder's words
		st := requireStatus(t, err, 422, metav1.StatusReasonInvalid)
		assert.Contains(t, st.Message, `strict decoding error: unknown field "bogus"`)
		require.NotEmpty(t, st.Details.Causes)
		assert.Equal(t, "patch", st.Details.Causes[0].Field)
		_, err = patch(cmResource, ns, "strict", pt, `{"bogus":1}`)
		assert.NoError(t, err, "unknown fields are dropped without Strict")
	}
	_, err := testH.Patch(context.Background(), &resourcev1.PatchRequest{Ref: ref(cmResource, ns, "strict"),
		Body: &resourcev1.Body{ContentType: mergePatchType, Data: []byte(`{}`)}, Options: &resourcev1.WriteOptions{FieldValidation: "yes"}})
	requireStatus(t, err, 400, metav1.StatusReasonBadRequest)
}

func TestPatchSubresources(t *testing.T) {
	ns := newNamespace(t)
	create(t, deployResource, ns, deployment("sub", 1))

	// status: only status changes.
	resp, err := testH.Patch(context.Background(), &resourcev1.PatchRequest{Ref: subRef(deployResource, ns, "sub", "status"),
		Body: &resourcev1.Body{ContentType: mergePatchType, Data: []byte(`{"status":{"readyReplicas":1},"spec":{"replicas":7}}`)}})
	require.NoError(t, err)
	out := &appsv1.Deployment{}
	decode(t, resp.GetBody(), out)
	assert.EqualValues(t, 1, out.Status.ReadyReplicas)
	assert.EqualValues(t, 1, *out.Spec.Replicas)

	// scale: spec.replicas changes.
	resp, err = testH.Patch(context.Background(), &resourcev1.PatchRequest{Ref: subRef(deployResource, ns, "sub", "scale"),
		Body: &resourcev1.Body{ContentType: mergePatchType, Data: []byte(`{"spec":{"replicas":6}}`)}})
	require.NoError(t, err)
	assert.Contains(t, string(resp.GetBody().GetData()), `"replicas":6`)
	d := get[*appsv1.Deployment](t, deployResource, ns, "sub")
	assert.EqualValues(t, 6, *d.Spec.Replicas)
	assert.EqualValues(t, 1, d.Status.ReadyReplicas)
}

func TestPatchDryRun(t *testing.T) {
	ns := newNamespace(t)
	create(t, cmResource, ns, configMap("dry", map[string]string{"v": "1"}))
	rev := currentRevision(t)
	resp, err := testH.Patch(context.Background(), &resourcev1.PatchRequest{Ref: ref(cmResource, ns, "dry"),
		Body: &resourcev1.Body{ContentType: mergePatchType, Data: []byte(`{"data":{"v":"2"}}`)}, Options: &resourcev1.WriteOptions{DryRun: []string{"All"}}})
	require.NoError(t, err)
	assert.Contains(t, string(resp.GetBody().GetData()), `"v":"2"`)
	assert.Equal(t, rev, currentRevision(t))
}

// JSON patch copy operations cannot grow an object without bound: kube caps the bytes they
// add (JSONPatchMaxCopyBytes, 3 MiB) and the operation count (10000).
func TestPatchJSONCopyAmplification(t *testing.T) {
	ns := newNamespace(t)
	create(t, cmResource, ns, configMap("amp", map[string]string{"seed": strings.Repeat("x", 1024)}))
	var ops []string
	for i := range 14 { // each copy doubles data: 16 MiB without a limit
		ops = append(ops, fmt.Sprintf(`{"op":"copy","from":"/data","path":"/data/x%d"}`, i))
	}
	_, err := patch(cmResource, ns, "amp", jsonPatchType, "["+strings.Join(ops, ",")+"]")
	st := kubeStatus(t, err)
	assert.Equal(t, int32(422), st.Code, "%+v", st)

	many := make([]string, 10001)
	for i := range many {
		many[i] = `{"op":"test","path":"/data/seed","value":"` + strings.Repeat("x", 1024) + `"}`
	}
	_, err = patch(cmResource, ns, "amp", jsonPatchType, "["+strings.Join(many, ",")+"]")
	requireStatus(t, err, 413, metav1.StatusReasonRequestEntityTooLarge)
}
