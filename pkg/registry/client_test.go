package registry

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

func TestClientResources(t *testing.T) {
	review := &Resource{GroupVersion: corev1.SchemeGroupVersion, Name: "reviews", Kind: "Review", Review: true}
	c := NewClient(NewHandler(testScheme, NewSet(nsResource, review, cmResource), testStore, stopAll))
	assert.Equal(t, []*Resource{nsResource, cmResource}, c.Resources(), "review APIs store nothing")
	r, ok := c.Lookup(cmResource.GroupVersionResource())
	assert.True(t, ok)
	assert.Same(t, cmResource, r)
	_, ok = c.Lookup(review.GroupVersionResource())
	assert.False(t, ok)
}

func TestClientReadAndWrite(t *testing.T) {
	readers(t, func(t *testing.T, h *Handler) {
		ctx := context.Background()
		c := NewClient(h)
		ns := newNamespace(t)
		create(t, cmResource, ns, configMap("a", map[string]string{"v": "1"}))
		held := configMap("held", nil)
		held.Finalizers = []string{"example.com/hold"}
		create(t, cmResource, ns, held)

		items, err := c.List(ctx, cmResource, ns, "metadata.name=a")
		require.NoError(t, err)
		require.Len(t, items, 1)
		// The objects are the caller's, even from the watch cache.
		items[0].(*corev1.ConfigMap).Data["v"] = "changed here"
		again, err := c.List(ctx, cmResource, ns, "metadata.name=a")
		require.NoError(t, err)
		assert.Equal(t, "1", again[0].(*corev1.ConfigMap).Data["v"])

		require.NoError(t, c.Update(ctx, cmResource, ns, "a", "", func(obj runtime.Object) {
			obj.(*corev1.ConfigMap).Data["v"] = "2"
		}))
		assert.Equal(t, "2", get[*corev1.ConfigMap](t, cmResource, ns, "a").Data["v"])
		err = c.Update(ctx, cmResource, ns, "missing", "", func(runtime.Object) {})
		assert.True(t, apierrors.IsNotFound(err), "%v", err)

		deleted, err := c.Delete(ctx, cmResource, ns, "held", nil)
		require.NoError(t, err)
		assert.False(t, deleted, "a finalizer holds it")
		assert.NotNil(t, get[*corev1.ConfigMap](t, cmResource, ns, "held").DeletionTimestamp)
		// The last finalizer gone, the update deletes it.
		require.NoError(t, c.Update(ctx, cmResource, ns, "held", "", func(obj runtime.Object) {
			obj.(*corev1.ConfigMap).Finalizers = nil
		}))
		items, err = c.List(ctx, cmResource, ns, "metadata.name=held")
		require.NoError(t, err)
		assert.Empty(t, items)

		wrong := metav1.Preconditions{UID: ptrTo(types.UID("wrong"))}
		_, err = c.Delete(ctx, cmResource, ns, "a", &metav1.DeleteOptions{Preconditions: &wrong})
		assert.True(t, apierrors.IsConflict(err), "%v", err)
		deleted, err = c.Delete(ctx, cmResource, ns, "a", nil)
		require.NoError(t, err)
		assert.True(t, deleted)
	})
}

func TestClientWatch(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	c := NewClient(testH)
	changes := c.Watch(ctx, cmResource)
	ns := newNamespace(t)
	next := func() Change {
		t.Helper()
		select {
		case ch := <-changes:
			return ch
		case <-time.After(waitFor):
			t.Fatal("no change within", waitFor)
			return Change{}
		}
	}
	// The watch starts at the revision of the moment Watch returned: the first write after
	// it is reported, however late etcd sets the watch up.
	create(t, cmResource, ns, configMap("first", nil))
	assert.Equal(t, Change{}, next(), "the first write")

	held := configMap("held", nil)
	held.Finalizers = []string{"example.com/hold"}
	create(t, cmResource, ns, held)
	_, err := c.Delete(ctx, cmResource, ns, "held", nil)
	require.NoError(t, err)
	// held's creation comes first.
	for ch := next(); ch != (Change{Deleting: true}); ch = next() {
		assert.Equal(t, Change{}, ch, "a write")
	}
	require.NoError(t, c.Update(ctx, cmResource, ns, "held", "", func(obj runtime.Object) {
		obj.(*corev1.ConfigMap).Finalizers = nil
	}))
	assert.Equal(t, Change{Deleted: true}, next(), "gone")

	cancel()
	require.Eventually(t, func() bool {
		_, open := <-changes
		return !open
	}, waitFor, time.Millisecond, "the channel closes when ctx is done")
}
