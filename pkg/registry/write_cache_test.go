package registry

import (
	"context"
	"strconv"
	"testing"
	"time"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/component-base/metrics/legacyregistry"
)

// cachedWrites is a namespace with one ConfigMap in testCachedH's running watch cache.
func cachedWrites(t *testing.T, name string) (ns string, created *corev1.ConfigMap) {
	t.Helper()
	ns = newNamespace(t)
	_, err := testCachedH.List(context.Background(), &resourcev1.ListRequest{Ref: ref(cmResource, ns, "")})
	require.NoError(t, err) // starts the cache
	created = create(t, cmResource, ns, configMap(name, map[string]string{"v": "1"}))
	waitCached(t, ns, name, created.ResourceVersion)
	return ns, created
}

// waitCached waits until the watch cache holds the ConfigMap at version rv.
func waitCached(t *testing.T, ns, name, rv string) {
	t.Helper()
	want, err := strconv.ParseInt(rv, 10, 64)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, rev, ok := testCachedH.cachedObject(cmResource, key(cmResource, ns, name))
		return ok && rev == want
	}, 10*time.Second, 5*time.Millisecond)
}

// setCached makes the watch cache hold obj for its key: a cache behind etcd, as it is for the
// moment between a write and its event.
func setCached(t *testing.T, obj *corev1.ConfigMap) {
	t.Helper()
	cs := testCachedH.caches.Load()
	cs.mu.Lock()
	c := cs.m[cmResource]
	cs.mu.Unlock()
	require.NotNil(t, c)
	c.mu.Lock()
	defer c.mu.Unlock()
	var o runtime.Object = obj.DeepCopy()
	c.objects.ReplaceOrInsert(cacheEntry{key: key(cmResource, obj.Namespace, obj.Name), obj: o, enc: itemEncodingsOf()})
}

// etcdGets is how many gets of ConfigMaps the process has sent etcd.
func etcdGets(t *testing.T) float64 {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != "etcd_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["operation"] == "get" && labels["resource"] == "configmaps" && labels["group"] == "" {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func cachedUpdate(t *testing.T, ns string, cm *corev1.ConfigMap) (*corev1.ConfigMap, error) {
	t.Helper()
	resp, err := testCachedH.Update(context.Background(), &resourcev1.UpdateRequest{Ref: ref(cmResource, ns, cm.Name), Body: jsonBody(t, cm)})
	if err != nil {
		return nil, err
	}
	out := &corev1.ConfigMap{}
	decode(t, resp.GetBody(), out)
	return out, nil
}

// With the watch cache current, an update and a delete start from its copy and read nothing
// from etcd (kube's cachedExistingObject); a failure decided on that copy reads etcd once, to
// see whether the copy was behind.
func TestWritesStartFromTheCache(t *testing.T) {
	ns, created := cachedWrites(t, "fast")

	before := etcdGets(t)
	next := created.DeepCopy()
	next.Data["v"] = "2"
	updated, err := cachedUpdate(t, ns, next)
	require.NoError(t, err)
	assert.Equal(t, "2", updated.Data["v"])
	assert.Zero(t, etcdGets(t)-before, "an update from a current cache reads nothing from etcd")
	waitCached(t, ns, "fast", updated.ResourceVersion)

	before = etcdGets(t)
	same, err := cachedUpdate(t, ns, updated)
	require.NoError(t, err)
	assert.Equal(t, updated.ResourceVersion, same.ResourceVersion, "nothing changed: nothing written")
	assert.Equal(t, 1.0, etcdGets(t)-before, "a no-op on the cache's copy is confirmed on etcd's")

	before = etcdGets(t)
	_, err = cachedUpdate(t, ns, next) // next names the version before: 409
	requireStatus(t, err, 409, metav1.StatusReasonConflict)
	assert.Equal(t, 1.0, etcdGets(t)-before, "a conflict found on the cache's copy is checked against etcd once")

	before = etcdGets(t)
	_, err = testCachedH.Delete(context.Background(), deleteReq(cmResource, ns, "fast",
		&metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &updated.ResourceVersion}}))
	require.NoError(t, err)
	assert.Zero(t, etcdGets(t)-before, "a delete from a current cache reads nothing from etcd")
	_, err = testH.Get(context.Background(), &resourcev1.GetRequest{Ref: ref(cmResource, ns, "fast")})
	requireStatus(t, err, 404, metav1.StatusReasonNotFound)
}

// A cache behind etcd loses nothing and refuses nothing it should not: every write decided on
// its stale copy is decided again on etcd's object.
func TestWritesFromACacheBehind(t *testing.T) {
	ns, created := cachedWrites(t, "behind")
	// etcd moves on; the cache is made to hold the first version still.
	cur := created.DeepCopy()
	cur.Data["v"] = "2"
	cur.Data["other"] = "kept"
	cur, err := update(t, cmResource, ns, "behind", cur)
	require.NoError(t, err)
	seen := "" // the version whose event the cache has had since the last write
	behind := func() {
		t.Helper()
		if seen != cur.ResourceVersion {
			waitCached(t, ns, "behind", cur.ResourceVersion)
			seen = cur.ResourceVersion
		}
		setCached(t, created)
	}

	t.Run("update naming etcd's version", func(t *testing.T) {
		behind()
		next := cur.DeepCopy()
		next.Data["v"] = "3"
		out, err := cachedUpdate(t, ns, next)
		require.NoError(t, err)
		assert.Equal(t, map[string]string{"v": "3", "other": "kept"}, out.Data)
		cur = out
	})
	t.Run("update naming the cache's version", func(t *testing.T) {
		behind()
		stale := created.DeepCopy()
		stale.Data["v"] = "lost"
		_, err := cachedUpdate(t, ns, stale)
		requireStatus(t, err, 409, metav1.StatusReasonConflict)
	})
	t.Run("unconditional update", func(t *testing.T) {
		behind()
		next := configMap("behind", map[string]string{"v": "4", "other": "kept"})
		out, err := cachedUpdate(t, ns, next)
		require.NoError(t, err)
		assert.Equal(t, "4", out.Data["v"])
		cur = out
	})
	t.Run("patch", func(t *testing.T) {
		behind()
		resp, err := testCachedH.Patch(context.Background(), &resourcev1.PatchRequest{Ref: ref(cmResource, ns, "behind"),
			Body: &resourcev1.Body{ContentType: "application/merge-patch+json", Data: []byte(`{"data":{"p":"x"}}`)}})
		require.NoError(t, err)
		out := &corev1.ConfigMap{}
		decode(t, resp.GetBody(), out)
		assert.Equal(t, map[string]string{"v": "4", "other": "kept", "p": "x"}, out.Data, "patched onto etcd's object, not the cache's")
		cur = out
	})
	t.Run("no-op update", func(t *testing.T) {
		behind()
		// The cache's copy would change; etcd's would not: nothing is written.
		out, err := cachedUpdate(t, ns, cur)
		require.NoError(t, err)
		assert.Equal(t, cur.ResourceVersion, out.ResourceVersion)
		assert.Equal(t, cur.ResourceVersion, get[*corev1.ConfigMap](t, cmResource, ns, "behind").ResourceVersion)
	})
	t.Run("delete with etcd's version as precondition", func(t *testing.T) {
		behind()
		resp, err := testCachedH.Delete(context.Background(), deleteReq(cmResource, ns, "behind",
			&metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &cur.ResourceVersion}}))
		require.NoError(t, err)
		out := &corev1.ConfigMap{}
		decode(t, resp.GetBody(), out)
		assert.Equal(t, "x", out.Data["p"], "the deleted object is etcd's")
		_, err = testH.Get(context.Background(), &resourcev1.GetRequest{Ref: ref(cmResource, ns, "behind")})
		requireStatus(t, err, 404, metav1.StatusReasonNotFound)
	})
	t.Run("gone from etcd", func(t *testing.T) {
		setCached(t, created) // the cache still holds an object etcd no longer has
		_, err := cachedUpdate(t, ns, configMap("behind", nil))
		requireStatus(t, err, 404, metav1.StatusReasonNotFound)
		_, err = testCachedH.Delete(context.Background(), deleteReq(cmResource, ns, "behind", nil))
		requireStatus(t, err, 404, metav1.StatusReasonNotFound)
	})
}
