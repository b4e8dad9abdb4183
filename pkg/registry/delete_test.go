package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func deleteReq(r *Resource, namespace, name string, opts *metav1.DeleteOptions) *resourcev1.DeleteRequest {
	req := &resourcev1.DeleteRequest{Ref: ref(r, namespace, name)}
	if opts != nil {
		opts.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "DeleteOptions"}
		data, _ := json.Marshal(opts)
		req.Body = &resourcev1.Body{ContentType: MediaJSON, Data: data}
	}
	return req
}

func TestDeleteImmediately(t *testing.T) {
	ns := newNamespace(t)
	created := create(t, cmResource, ns, configMap("gone", nil))
	resp, err := testH.Delete(context.Background(), deleteReq(cmResource, ns, "gone", nil))
	require.NoError(t, err)
	assert.EqualValues(t, 200, resp.GetCode())
	out := &corev1.ConfigMap{}
	decode(t, resp.GetBody(), out)
	assert.Equal(t, created.UID, out.UID)
	_, err = testH.Get(context.Background(), &resourcev1.GetRequest{Ref: ref(cmResource, ns, "gone")})
	requireStatus(t, err, 404, metav1.StatusReasonNotFound)
	_, err = testH.Delete(context.Background(), deleteReq(cmResource, ns, "gone", nil))
	requireStatus(t, err, 404, metav1.StatusReasonNotFound)
}

func TestDeleteWithFinalizers(t *testing.T) {
	ns := newNamespace(t)
	cm := configMap("held", nil)
	cm.Finalizers = []string{"example.com/hold"}
	create(t, cmResource, ns, cm)

	resp, err := testH.Delete(context.Background(), deleteReq(cmResource, ns, "held", nil))
	require.NoError(t, err)
	assert.EqualValues(t, 200, resp.GetCode(), "kube answers 200 while finalizers hold the object")
	out := &corev1.ConfigMap{}
	decode(t, resp.GetBody(), out)
	require.NotNil(t, out.DeletionTimestamp)
	require.NotNil(t, out.DeletionGracePeriodSeconds)
	assert.Zero(t, *out.DeletionGracePeriodSeconds)

	held := get[*corev1.ConfigMap](t, cmResource, ns, "held")
	require.NotNil(t, held.DeletionTimestamp)
	assert.Equal(t, out.ResourceVersion, held.ResourceVersion)

	// Deleting again changes nothing.
	resp, err = testH.Delete(context.Background(), deleteReq(cmResource, ns, "held", nil))
	require.NoError(t, err)
	assert.EqualValues(t, 200, resp.GetCode(), "kube answers 200 while finalizers hold the object")
	assert.Equal(t, held.ResourceVersion, get[*corev1.ConfigMap](t, cmResource, ns, "held").ResourceVersion)

	// No new finalizers on an object being deleted.
	more := held.DeepCopy()
	more.Finalizers = append(more.Finalizers, "example.com/more")
	_, err = update(t, cmResource, ns, "held", more)
	requireStatus(t, err, 422, metav1.StatusReasonInvalid)

	// The client cannot clear the deletionTimestamp.
	cleared := held.DeepCopy()
	cleared.DeletionTimestamp = nil
	cleared.Labels = map[string]string{"still": "deleting"}
	cleared, err = update(t, cmResource, ns, "held", cleared)
	require.NoError(t, err)
	assert.NotNil(t, cleared.DeletionTimestamp)

	// Removing the last finalizer deletes it.
	cleared.Finalizers = nil
	_, err = update(t, cmResource, ns, "held", cleared)
	require.NoError(t, err)
	_, err = testH.Get(context.Background(), &resourcev1.GetRequest{Ref: ref(cmResource, ns, "held")})
	requireStatus(t, err, 404, metav1.StatusReasonNotFound)
}

func TestDeleteFinalizerRemovedByPatch(t *testing.T) {
	ns := newNamespace(t)
	d := deployment("held", 1)
	d.Finalizers = []string{"example.com/a", "example.com/b"}
	create(t, deployResource, ns, d)
	resp, err := testH.Delete(context.Background(), deleteReq(deployResource, ns, "held", nil))
	require.NoError(t, err)
	assert.EqualValues(t, 200, resp.GetCode(), "kube answers 200 while finalizers hold the object")
	out := &appsv1.Deployment{}
	decode(t, resp.GetBody(), out)
	assert.EqualValues(t, 2, out.Generation, "generation bumps when deletion starts")

	_, err = patch(deployResource, ns, "held", jsonPatchType, `[{"op":"remove","path":"/metadata/finalizers/0"}]`)
	require.NoError(t, err)
	assert.Equal(t, []string{"example.com/b"}, get[*appsv1.Deployment](t, deployResource, ns, "held").Finalizers)
	_, err = patch(deployResource, ns, "held", mergePatchType, `{"metadata":{"finalizers":null}}`)
	require.NoError(t, err)
	_, err = testH.Get(context.Background(), &resourcev1.GetRequest{Ref: ref(deployResource, ns, "held")})
	requireStatus(t, err, 404, metav1.StatusReasonNotFound)
}

func TestDeletePreconditions(t *testing.T) {
	ns := newNamespace(t)
	created := create(t, cmResource, ns, configMap("pre", nil))
	wrongUID := types.UID("00000000-0000-0000-0000-000000000000")
	staleRV := "1"

	tests := []struct {
		name string
		pre  *metav1.Preconditions
	}{
		{"uid", &metav1.Preconditions{UID: &wrongUID}},
		{"resourceVersion", &metav1.Preconditions{ResourceVersion: &staleRV}},
		{"both, uid right", &metav1.Preconditions{UID: &created.UID, ResourceVersion: &staleRV}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := testH.Delete(context.Background(), deleteReq(cmResource, ns, "pre", &metav1.DeleteOptions{Preconditions: tc.pre}))
			st := requireStatus(t, err, 409, metav1.StatusReasonConflict)
			assert.Contains(t, st.Message, "Precondition failed")
		})
	}
	get[*corev1.ConfigMap](t, cmResource, ns, "pre")

	resp, err := testH.Delete(context.Background(), deleteReq(cmResource, ns, "pre",
		&metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &created.UID, ResourceVersion: &created.ResourceVersion}}))
	require.NoError(t, err)
	assert.EqualValues(t, 200, resp.GetCode())
}

func TestDeleteOptionsErrors(t *testing.T) {
	ns := newNamespace(t)
	create(t, cmResource, ns, configMap("opts", nil))
	for name, body := range map[string]*resourcev1.Body{
		"malformed":          {ContentType: MediaJSON, Data: []byte(`{"preconditions":`)},
		"bad propagation":    {ContentType: MediaJSON, Data: []byte(`{"propagationPolicy":"Sideways"}`)},
		"wrong kind":         {ContentType: MediaJSON, Data: []byte(`{"kind":"ConfigMap","apiVersion":"v1"}`)},
		"unknown media type": {ContentType: "text/plain", Data: []byte(`x`)},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := testH.Delete(context.Background(), &resourcev1.DeleteRequest{Ref: ref(cmResource, ns, "opts"), Body: body})
			st := kubeStatus(t, err)
			assert.True(t, st.Code == 400 || st.Code == 415, "%+v", st)
		})
	}
	get[*corev1.ConfigMap](t, cmResource, ns, "opts")
}

func TestDeleteDryRun(t *testing.T) {
	ns := newNamespace(t)
	create(t, cmResource, ns, configMap("dry", nil))
	rev := currentRevision(t)
	resp, err := testH.Delete(context.Background(), &resourcev1.DeleteRequest{Ref: ref(cmResource, ns, "dry"),
		Options: &resourcev1.DeleteOptions{DryRun: []string{"All"}}})
	require.NoError(t, err)
	assert.EqualValues(t, 200, resp.GetCode())
	_, err = testH.Delete(context.Background(), deleteReq(cmResource, ns, "dry", &metav1.DeleteOptions{DryRun: []string{"All"}}))
	require.NoError(t, err)
	assert.Equal(t, rev, currentRevision(t))
	get[*corev1.ConfigMap](t, cmResource, ns, "dry")
}

func TestDeleteCollection(t *testing.T) {
	ns := newNamespace(t)
	for i := range 5 {
		cm := configMap(fmt.Sprintf("dc-%d", i), nil)
		cm.Labels = map[string]string{"app": "a"}
		if i >= 3 {
			cm.Labels["app"] = "b"
		}
		create(t, cmResource, ns, cm)
	}
	held := configMap("dc-held", nil)
	held.Labels = map[string]string{"app": "a"}
	held.Finalizers = []string{"example.com/hold"}
	create(t, cmResource, ns, held)
	other := newNamespace(t)
	elsewhere := configMap("dc-0", nil)
	elsewhere.Labels = map[string]string{"app": "a"}
	create(t, cmResource, other, elsewhere)

	// dry run first: nothing goes.
	_, err := testH.DeleteCollection(context.Background(), &resourcev1.DeleteCollectionRequest{Ref: ref(cmResource, ns, ""),
		ListOptions: &resourcev1.ListOptions{LabelSelector: "app=a"}, Options: &resourcev1.DeleteOptions{DryRun: []string{"All"}}})
	require.NoError(t, err)
	assert.Len(t, listCMs(t, ns, "").Items, 6)

	resp, err := testH.DeleteCollection(context.Background(), &resourcev1.DeleteCollectionRequest{Ref: ref(cmResource, ns, ""),
		ListOptions: &resourcev1.ListOptions{LabelSelector: "app=a"}})
	require.NoError(t, err)
	deleted := &corev1.ConfigMapList{}
	decode(t, resp.GetBody(), deleted)
	assert.Equal(t, "ConfigMapList", deleted.Kind)
	assert.ElementsMatch(t, []string{"dc-0", "dc-1", "dc-2", "dc-held"}, names(deleted.Items))

	left := listCMs(t, ns, "")
	assert.ElementsMatch(t, []string{"dc-3", "dc-4", "dc-held"}, names(left.Items))
	for _, cm := range left.Items {
		if cm.Name == "dc-held" {
			assert.NotNil(t, cm.DeletionTimestamp, "a held object is only marked")
		}
	}
	assert.Len(t, listCMs(t, other, "").Items, 1, "other namespaces are untouched")

	_, err = testH.DeleteCollection(context.Background(), &resourcev1.DeleteCollectionRequest{Ref: ref(cmResource, ns, ""),
		ListOptions: &resourcev1.ListOptions{FieldSelector: "data.x=1"}})
	requireStatus(t, err, 400, metav1.StatusReasonBadRequest)
}

func names(items []corev1.ConfigMap) []string {
	out := []string{}
	for _, cm := range items {
		out = append(out, cm.Name)
	}
	return out
}

// kube's one 202: deletion pending and the client asked orphanDependents=false.
func TestDeleteAcceptedWithOrphanDependentsFalse(t *testing.T) {
	ns := newNamespace(t)
	cm := configMap("held202", nil)
	cm.Finalizers = []string{"example.com/hold"}
	create(t, cmResource, ns, cm)
	no := false
	resp, err := testH.Delete(context.Background(), deleteReq(cmResource, ns, "held202", &metav1.DeleteOptions{OrphanDependents: &no}))
	require.NoError(t, err)
	assert.EqualValues(t, 202, resp.GetCode())
}

// Graceful deletion is kube's: a pod on a node is marked with its grace period and stays
// until a delete with grace 0 (its kubelet's, or a forced one); a shorter grace period moves
// the deadline earlier, a longer one changes nothing; a pod never scheduled goes at once.
func TestDeleteGraceful(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	pod := func(name, node string, finalizers ...string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: finalizers},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	}
	grace := func(s int64) *metav1.DeleteOptions { return &metav1.DeleteOptions{GracePeriodSeconds: &s} }
	deleteFor := func(name string, opts *metav1.DeleteOptions) *corev1.Pod {
		t.Helper()
		resp, err := testH.Delete(ctx, deleteReq(podResource, ns, name, opts))
		require.NoError(t, err)
		assert.EqualValues(t, 200, resp.GetCode())
		out := &corev1.Pod{}
		decode(t, resp.GetBody(), out)
		return out
	}
	gone := func(name string) bool {
		_, err := testH.Get(ctx, &resourcev1.GetRequest{Ref: ref(podResource, ns, name)})
		return err != nil && kubeStatus(t, err).Code == 404
	}

	create(t, podResource, ns, pod("running", "node-1"))
	before := time.Now()
	marked := deleteFor("running", nil)
	require.NotNil(t, marked.DeletionTimestamp)
	assert.EqualValues(t, 30, *marked.DeletionGracePeriodSeconds)
	assert.WithinDuration(t, before.Add(30*time.Second), marked.DeletionTimestamp.Time, 2*time.Second)
	assert.EqualValues(t, 2, marked.Generation, "the generation moves when graceful deletion starts")
	stored := get[*corev1.Pod](t, podResource, ns, "running")
	assert.Equal(t, marked.ResourceVersion, stored.ResourceVersion)

	again := deleteFor("running", grace(60))
	assert.Equal(t, marked.ResourceVersion, again.ResourceVersion, "a longer grace period changes nothing")
	assert.EqualValues(t, 30, *again.DeletionGracePeriodSeconds)

	shorter := deleteFor("running", grace(10))
	assert.EqualValues(t, 10, *shorter.DeletionGracePeriodSeconds)
	assert.Equal(t, marked.DeletionTimestamp.Add(-20*time.Second).Unix(), shorter.DeletionTimestamp.Unix())
	assert.False(t, gone("running"))

	deleteFor("running", grace(0))
	assert.True(t, gone("running"), "grace 0 deletes it")

	// Never scheduled: gone at once, but watchers see it marked first, as kube writes it.
	create(t, podResource, ns, pod("pending", ""))
	rv := get[*corev1.Pod](t, podResource, ns, "pending").ResourceVersion
	w := startWatch(t, testH, &resourcev1.WatchRequest{Ref: ref(podResource, ns, ""), Options: &resourcev1.ListOptions{ResourceVersion: rv}})
	w.ack(t, MediaJSON)
	gonePod := deleteFor("pending", nil)
	assert.EqualValues(t, 0, *gonePod.DeletionGracePeriodSeconds)
	assert.True(t, gone("pending"))
	assert.Equal(t, "MODIFIED", w.next(t).GetType())
	assert.Equal(t, "DELETED", w.next(t).GetType())

	// A finalizer keeps a force-deleted pod; one removed while grace is left does not delete it.
	create(t, podResource, ns, pod("held", "node-1", "example.com/hold"))
	held := deleteFor("held", grace(0))
	assert.EqualValues(t, 0, *held.DeletionGracePeriodSeconds)
	assert.False(t, gone("held"))
	held.Finalizers = nil
	_, err := update(t, podResource, ns, "held", held)
	require.NoError(t, err)
	assert.True(t, gone("held"))

	create(t, podResource, ns, pod("waiting", "node-1", "example.com/hold"))
	waiting := deleteFor("waiting", nil)
	waiting.Finalizers = nil
	_, err = update(t, podResource, ns, "waiting", waiting)
	require.NoError(t, err)
	assert.False(t, gone("waiting"), "grace is left: the kubelet's delete removes it")

	// A collection: each pod gets its own grace period.
	create(t, podResource, ns, pod("c-scheduled", "node-1"))
	create(t, podResource, ns, pod("c-pending", ""))
	_, err = testH.DeleteCollection(ctx, &resourcev1.DeleteCollectionRequest{Ref: ref(podResource, ns, ""),
		ListOptions: &resourcev1.ListOptions{FieldSelector: "metadata.name!=waiting"}})
	require.NoError(t, err)
	assert.True(t, gone("c-pending"))
	assert.False(t, gone("c-scheduled"))
}

// A DeleteOptions body is read as kube-apiserver 1.37.2 reads it (answers recorded there): any
// apiVersion with kind DeleteOptions, another kind refused in kube's words, a field of the
// wrong type refused with encoding/json's.
func TestDeleteOptionsBody(t *testing.T) {
	for _, tc := range []struct{ body, wantErr string }{
		{`{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Background"}`, ""},
		{`{"kind":"DeleteOptions","apiVersion":"apps/v2"}`, ""},
		{"kind: DeleteOptions\napiVersion: meta.k8s.io/v1\ngracePeriodSeconds: 3\n", ""},
		{`{"kind":"Pod","apiVersion":"v1"}`, `no kind "Pod" is registered for version "v1" in scheme "pkg/runtime/scheme.go:111"`},
		{`{"kind":"DeleteOptions","gracePeriodSeconds":"x"}`, "json: cannot unmarshal string into Go struct field DeleteOptions.gracePeriodSeconds of type int64"},
	} {
		_, _, err := testH.deleteOptions(cmResource, &resourcev1.Body{ContentType: "application/json", Data: []byte(tc.body)}, nil)
		if tc.wantErr == "" {
			assert.NoError(t, err, tc.body)
			continue
		}
		require.Error(t, err, tc.body)
		assert.True(t, apierrors.IsBadRequest(err), tc.body)
		assert.Equal(t, tc.wantErr, err.Error())
	}
}
