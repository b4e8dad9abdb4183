package registry

import (
	"context"
	"strconv"
	"sync"
	"testing"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestUpdateOptimisticConcurrency(t *testing.T) {
	ns := newNamespace(t)
	created := create(t, cmResource, ns, configMap("occ", map[string]string{"v": "1"}))

	// With the current resourceVersion: accepted, and the version moves on.
	next := created.DeepCopy()
	next.Data["v"] = "2"
	updated, err := update(t, cmResource, ns, "occ", next)
	require.NoError(t, err)
	assert.Equal(t, strconv.FormatInt(currentRevision(t), 10), updated.ResourceVersion)
	assert.NotEqual(t, created.ResourceVersion, updated.ResourceVersion)
	assert.Equal(t, created.UID, updated.UID)
	assert.Equal(t, created.CreationTimestamp, updated.CreationTimestamp)

	// With the stale one: 409.
	stale := created.DeepCopy()
	stale.Data["v"] = "stale"
	_, err = update(t, cmResource, ns, "occ", stale)
	st := requireStatus(t, err, 409, metav1.StatusReasonConflict)
	assert.Contains(t, st.Message, "the object has been modified")
	assert.Equal(t, "occ", st.Details.Name)
	assert.Equal(t, "2", get[*corev1.ConfigMap](t, cmResource, ns, "occ").Data["v"])

	// Without one: unconditional.
	uncond := created.DeepCopy()
	uncond.ResourceVersion = ""
	uncond.Data["v"] = "3"
	updated, err = update(t, cmResource, ns, "occ", uncond)
	require.NoError(t, err)
	assert.Equal(t, "3", updated.Data["v"])
	assert.Equal(t, updated.ResourceVersion, get[*corev1.ConfigMap](t, cmResource, ns, "occ").ResourceVersion)
}

// Unconditional updates racing each other all succeed: a conflict with a concurrent writer is
// retried against the new current object, as kube's GuaranteedUpdate does.
func TestUpdateUnconditionalRetriesOnConflict(t *testing.T) {
	ns := newNamespace(t)
	create(t, cmResource, ns, configMap("race", nil))
	const writers = 8
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	start := make(chan struct{})
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cm := configMap("race", map[string]string{"writer": strconv.Itoa(i)})
			body := jsonBody(t, cm)
			<-start
			_, err := testH.Update(context.Background(), &resourcev1.UpdateRequest{Ref: ref(cmResource, ns, "race"), Body: body})
			errs <- err
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
}

func TestUpdateErrors(t *testing.T) {
	ns := newNamespace(t)
	created := create(t, cmResource, ns, configMap("upd", nil))
	renamed := created.DeepCopy()
	renamed.Name = "other"
	otherNS := created.DeepCopy()
	otherNS.Namespace = "elsewhere"
	badLabel := created.DeepCopy()
	badLabel.Labels = map[string]string{"bad label": "x"}
	changedUID := created.DeepCopy()
	changedUID.UID = "something-else"

	tests := []struct {
		name   string
		target string
		body   *resourcev1.Body
		code   int32
		reason metav1.StatusReason
	}{
		{"missing object", "nope", jsonBody(t, configMap("nope", nil)), 404, metav1.StatusReasonNotFound},
		{"name mismatch", "upd", jsonBody(t, renamed), 400, metav1.StatusReasonBadRequest},
		{"namespace mismatch", "upd", jsonBody(t, otherNS), 400, metav1.StatusReasonBadRequest},
		{"invalid metadata", "upd", jsonBody(t, badLabel), 422, metav1.StatusReasonInvalid},
		{"empty body", "upd", &resourcev1.Body{ContentType: MediaJSON}, 400, metav1.StatusReasonBadRequest},
		{"unknown content type", "upd", &resourcev1.Body{ContentType: "text/csv", Data: []byte("a,b")}, 415, metav1.StatusReasonUnsupportedMediaType},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := testH.Update(context.Background(), &resourcev1.UpdateRequest{Ref: ref(cmResource, ns, tc.target), Body: tc.body})
			requireStatus(t, err, tc.code, tc.reason)
		})
	}

	// A client cannot change system fields: the uid stays.
	updated, err := update(t, cmResource, ns, "upd", changedUID)
	require.NoError(t, err)
	assert.Equal(t, created.UID, updated.UID)
}

func TestUpdateDryRun(t *testing.T) {
	ns := newNamespace(t)
	created := create(t, cmResource, ns, configMap("dry", map[string]string{"v": "1"}))
	next := created.DeepCopy()
	next.Data["v"] = "2"
	rev := currentRevision(t)
	resp, err := testH.Update(context.Background(), &resourcev1.UpdateRequest{Ref: ref(cmResource, ns, "dry"), Body: jsonBody(t, next),
		Options: &resourcev1.WriteOptions{DryRun: []string{"All"}}})
	require.NoError(t, err)
	out := &corev1.ConfigMap{}
	decode(t, resp.GetBody(), out)
	assert.Equal(t, "2", out.Data["v"])
	assert.Equal(t, rev, currentRevision(t))
	assert.Equal(t, "1", get[*corev1.ConfigMap](t, cmResource, ns, "dry").Data["v"])
}

func TestUpdateGeneration(t *testing.T) {
	ns := newNamespace(t)
	d := create(t, deployResource, ns, deployment("gen", 1))
	require.EqualValues(t, 1, d.Generation)

	// Metadata only: generation stays.
	d.Labels = map[string]string{"new": "label"}
	d, err := update(t, deployResource, ns, "gen", d)
	require.NoError(t, err)
	assert.EqualValues(t, 1, d.Generation)
	assert.Equal(t, "label", d.Labels["new"])

	// A client-sent generation is ignored.
	d.Generation = 100
	d, err = update(t, deployResource, ns, "gen", d)
	require.NoError(t, err)
	assert.EqualValues(t, 1, d.Generation)

	// Spec change: generation bumps.
	d.Spec.Replicas = ptrTo[int32](5)
	d, err = update(t, deployResource, ns, "gen", d)
	require.NoError(t, err)
	assert.EqualValues(t, 2, d.Generation)
	assert.EqualValues(t, 5, *d.Spec.Replicas)

	// Same spec again: no bump.
	d, err = update(t, deployResource, ns, "gen", d)
	require.NoError(t, err)
	assert.EqualValues(t, 2, d.Generation)
}

func TestUpdateStatusSubresource(t *testing.T) {
	ns := newNamespace(t)
	d := create(t, deployResource, ns, deployment("st", 1))

	// The status subresource changes status and, as most kinds' status strategies allow, labels
	// (a kind's ResetStatusMeta keeps what it must); spec and generation stay.
	in := d.DeepCopy()
	in.Status.Replicas = 3
	in.Status.ObservedGeneration = 1
	in.Spec.Replicas = ptrTo[int32](9)
	in.Labels = map[string]string{"via": "status"}
	resp, err := testH.Update(context.Background(), &resourcev1.UpdateRequest{Ref: subRef(deployResource, ns, "st", "status"), Body: jsonBody(t, in)})
	require.NoError(t, err)
	out := &appsv1.Deployment{}
	decode(t, resp.GetBody(), out)
	assert.EqualValues(t, 3, out.Status.Replicas)
	assert.EqualValues(t, 1, *out.Spec.Replicas)
	assert.Equal(t, map[string]string{"via": "status"}, out.Labels)
	assert.EqualValues(t, 1, out.Generation)
	stored := get[*appsv1.Deployment](t, deployResource, ns, "st")
	assert.EqualValues(t, 3, stored.Status.Replicas)
	assert.EqualValues(t, 1, *stored.Spec.Replicas)

	// The main resource keeps the stored status.
	main := stored.DeepCopy()
	main.Status.Replicas = 77
	main.Spec.Replicas = ptrTo[int32](2)
	out, err = update(t, deployResource, ns, "st", main)
	require.NoError(t, err)
	assert.EqualValues(t, 3, out.Status.Replicas)
	assert.EqualValues(t, 2, *out.Spec.Replicas)
	assert.EqualValues(t, 2, out.Generation)

	// A stale resourceVersion on the status subresource is a conflict too.
	_, err = testH.Update(context.Background(), &resourcev1.UpdateRequest{Ref: subRef(deployResource, ns, "st", "status"), Body: jsonBody(t, in)})
	requireStatus(t, err, 409, metav1.StatusReasonConflict)

	// configmaps have no status subresource.
	create(t, cmResource, ns, configMap("nostatus", nil))
	_, err = testH.Update(context.Background(), &resourcev1.UpdateRequest{Ref: subRef(cmResource, ns, "nostatus", "status"),
		Body: jsonBody(t, configMap("nostatus", nil))})
	requireStatus(t, err, 404, metav1.StatusReasonNotFound)
}

func TestUpdateScaleSubresource(t *testing.T) {
	ns := newNamespace(t)
	create(t, deployResource, ns, deployment("sc", 1))
	scale := map[string]any{"apiVersion": "autoscaling/v1", "kind": "Scale",
		"metadata": map[string]any{"name": "sc", "namespace": ns}, "spec": map[string]any{"replicas": 4}}
	resp, err := testH.Update(context.Background(), &resourcev1.UpdateRequest{Ref: subRef(deployResource, ns, "sc", "scale"), Body: jsonBody(t, scale)})
	require.NoError(t, err)
	assert.Contains(t, string(resp.GetBody().GetData()), `"kind":"Scale"`)
	d := get[*appsv1.Deployment](t, deployResource, ns, "sc")
	assert.EqualValues(t, 4, *d.Spec.Replicas)
	assert.EqualValues(t, 2, d.Generation)
}

func TestUpdateImmutableConfigMap(t *testing.T) {
	ns := newNamespace(t)
	cm := configMap("frozen", map[string]string{"k": "v"})
	cm.Immutable = ptrTo(true)
	created := create(t, cmResource, ns, cm)

	changedData := created.DeepCopy()
	changedData.Data["k"] = "other"
	_, err := update(t, cmResource, ns, "frozen", changedData)
	st := requireStatus(t, err, 422, metav1.StatusReasonInvalid)
	require.NotEmpty(t, st.Details.Causes)
	assert.Equal(t, "data", st.Details.Causes[0].Field)

	mutable := created.DeepCopy()
	mutable.Immutable = ptrTo(false)
	_, err = update(t, cmResource, ns, "frozen", mutable)
	st = requireStatus(t, err, 422, metav1.StatusReasonInvalid)
	assert.Equal(t, "immutable", st.Details.Causes[0].Field)

	// Metadata may still change.
	labelled := created.DeepCopy()
	labelled.Labels = map[string]string{"a": "b"}
	_, err = update(t, cmResource, ns, "frozen", labelled)
	require.NoError(t, err)
}
