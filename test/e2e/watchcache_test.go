package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// etcdMetric reads a metric of the etcd embedded in this test process.
func etcdMetric(t *testing.T, name string) float64 {
	t.Helper()
	families, err := prometheus.DefaultGatherer.Gather()
	require.NoError(t, err)
	total := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			total += m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	return total
}

// Many watchers and lists are served by core's watch cache: etcd sees one watch per
// resource and no range reads for lists at resourceVersion 0, yet every watcher gets
// every event.
func TestWatchCacheSparesEtcd(t *testing.T) {
	c := startCluster(t) // etcd runs in this process, so its metrics are readable here
	cs := clientset(t, c.client)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	createNamespace(t, cs, "cache") // the label below leaves out its kube-root-ca.crt
	cms := cs.CoreV1().ConfigMaps("cache")
	for i := 0; i < 10; i++ {
		_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c%d", i),
			Labels: map[string]string{"set": "cache"}}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	// Warm the cache, let the controllers settle after startup (bootstrap, aggregation), then
	// count.
	_, err := cms.List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	require.NoError(t, err)
	last, quiet := -1.0, 0
	// etcd serves no range read for a second: the background work that follows readiness
	// (priority and fairness's informers, namespace deletion's) has settled.
	require.Eventually(t, func() bool {
		now := etcdMetric(t, "etcd_mvcc_range_total")
		if now == last {
			quiet++
		} else {
			quiet = 0
		}
		last = now
		return quiet >= 5
	}, 20*time.Second, 200*time.Millisecond, "etcd range reads never stop: something polls etcd")
	watchersBefore := etcdMetric(t, "etcd_debugging_mvcc_watcher_total")
	rangesBefore := etcdMetric(t, "etcd_mvcc_range_total")

	const n = 50
	var watchers []watch.Interface
	for i := 0; i < n; i++ {
		w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: "0", LabelSelector: "set=cache"})
		require.NoError(t, err)
		defer w.Stop()
		watchers = append(watchers, w)
		list, err := cms.List(ctx, metav1.ListOptions{ResourceVersion: "0", LabelSelector: "set=cache"})
		require.NoError(t, err)
		require.Len(t, list.Items, 10)
	}
	assert.LessOrEqual(t, etcdMetric(t, "etcd_debugging_mvcc_watcher_total")-watchersBefore, 2.0,
		"%d client watches must not open %d etcd watches", n, n)
	assert.Less(t, etcdMetric(t, "etcd_mvcc_range_total")-rangesBefore, float64(n)/2,
		"lists at resourceVersion 0 come from the cache")

	_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late", Labels: map[string]string{"set": "cache"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	for i, w := range watchers {
		seen := 0
		for seen < 11 {
			select {
			case ev, ok := <-w.ResultChan():
				require.True(t, ok, "watcher %d closed", i)
				require.Equal(t, watch.Added, ev.Type)
				seen++
			case <-ctx.Done():
				t.Fatalf("watcher %d saw %d of 11 events", i, seen)
			}
		}
	}
}
