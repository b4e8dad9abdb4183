package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// write is one change made by the test: the object's name and its resourceVersion after the
// change (0 for a delete, whose version the client is not told), whether the object existed
// before and after it, and whether it matched the selector before and after.
type write struct {
	name                   string
	rv                     int64
	existed, exists        bool
	matchedBefore, matches bool
}

// seen is an event as a watcher saw it (with version 0 for a delete).
type seen struct {
	typ  watch.EventType
	name string
	rv   int64
}

// expected is what a watch sees of writes: with a selector, an object that starts matching is
// ADDED and one that stops is DELETED, as kube does.
func expected(writes []write, selector bool) []seen {
	var out []seen
	for _, w := range writes {
		before, now := w.existed, w.exists
		if selector {
			before, now = w.matchedBefore, w.matches
		}
		switch {
		case before && now:
			out = append(out, seen{watch.Modified, w.name, w.rv})
		case now:
			out = append(out, seen{watch.Added, w.name, w.rv})
		case before:
			out = append(out, seen{watch.Deleted, w.name, w.rv})
		}
	}
	return out
}

// Clients watching the same thing from different versions share one backend watch in the
// gateway, yet each gets exactly the events after its own version, in order, with and
// without a label selector; and a client from before the shared watch's start still gets its
// own.
func TestSharedWatchesDeliverExactlyTheEventsAfterTheirVersion(t *testing.T) {
	c, _ := startAllInOne(t)
	cs := clientset(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	createNamespace(t, cs, "share")
	cms := cs.CoreV1().ConfigMaps("share")
	rng := rand.New(rand.NewPCG(1, 2))

	var (
		mu     sync.Mutex
		writes []write
		live   = map[string]bool{} // name -> matches the selector
	)
	const selector = "tier=front"
	writeOne := func() {
		name := fmt.Sprintf("cm-%d", rng.IntN(8))
		front := rng.IntN(2) == 0
		labels := map[string]string{"tier": "back"}
		if front {
			labels["tier"] = "front"
		}
		mu.Lock()
		matched, exists := live[name]
		mu.Unlock()
		var w write
		switch {
		case !exists:
			cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{})
			require.NoError(t, err)
			w = write{name: name, rv: rvOf(t, cm.ResourceVersion), exists: true, matches: front}
		case rng.IntN(4) == 0:
			require.NoError(t, cms.Delete(ctx, name, metav1.DeleteOptions{}))
			w = write{name: name, existed: true, matchedBefore: matched}
		default:
			cm, err := cms.Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
				Data: map[string]string{"n": strconv.Itoa(rng.Int())}}, metav1.UpdateOptions{})
			require.NoError(t, err)
			w = write{name: name, rv: rvOf(t, cm.ResourceVersion), existed: true, exists: true, matchedBefore: matched, matches: front}
		}
		mu.Lock()
		defer mu.Unlock()
		if !w.exists {
			delete(live, name)
		} else {
			live[name] = w.matches
		}
		writes = append(writes, w)
	}
	for range 60 {
		writeOne()
	}

	// Watchers from the versions of random earlier writes, half with the selector, started one
	// after another while the writes go on.
	type watcher struct {
		after    int // the index of the write it watches from
		from     int64
		selector bool
		w        watch.Interface
	}
	var watchers []watcher
	for i := range 30 {
		// From a create or an update (a delete's version is not known), after the first ten.
		mu.Lock()
		k := 10 + rng.IntN(len(writes)-10)
		for writes[k].rv == 0 {
			k--
		}
		from := writes[k].rv
		mu.Unlock()
		opts := metav1.ListOptions{ResourceVersion: strconv.FormatInt(from, 10)}
		if i%2 == 1 {
			opts.LabelSelector = selector
		}
		w, err := cms.Watch(ctx, opts)
		require.NoError(t, err)
		defer w.Stop()
		watchers = append(watchers, watcher{after: k, from: from, selector: i%2 == 1, w: w})
		writeOne()
	}
	_, metrics, _ := c.get("/metrics")
	shared, clients := metricValue(t, metrics, "apichain_gateway_shared_watches"), metricValue(t, metrics, "apichain_gateway_shared_watch_clients")
	assert.Greater(t, clients, shared, "no backend watch is shared (%v backend watches, %v clients)", shared, clients)
	for range 20 {
		writeOne()
	}

	for i, wt := range watchers {
		want := expected(writes[wt.after+1:], wt.selector)
		var got []seen
		timeout := time.After(30 * time.Second)
		for len(got) < len(want) {
			select {
			case ev, ok := <-wt.w.ResultChan():
				require.True(t, ok, "watcher %d (from %d) ended after %d of %d events", i, wt.from, len(got), len(want))
				cm, isCM := ev.Object.(*corev1.ConfigMap)
				require.True(t, isCM, "watcher %d: %s event of %T", i, ev.Type, ev.Object)
				rv := rvOf(t, cm.ResourceVersion)
				if ev.Type == watch.Deleted && !slices.ContainsFunc(writes, func(w write) bool { return w.rv == rv }) {
					rv = 0 // the delete's own version
				}
				got = append(got, seen{ev.Type, cm.Name, rv})
			case <-timeout:
				require.Failf(t, "timed out", "watcher %d (from %d, selector %v) got %d of %d events: %v", i, wt.from, wt.selector, len(got), len(want), got)
			}
		}
		require.Equal(t, want, got, "watcher %d from %d (selector %v)", i, wt.from, wt.selector)
	}

	// A deprecated kind's warning comes with its watches, shared or not, as with its other
	// requests (kubectl get endpoints -w prints it).
	eps, err := cs.CoreV1().Endpoints("share").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, rv := range []string{"", eps.ResourceVersion, eps.ResourceVersion} {
		rec := &recordedWarnings{}
		cfg := *c.config
		cfg.WarningHandler = rec
		w, err := kubernetes.NewForConfigOrDie(&cfg).CoreV1().Endpoints("share").Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
		require.NoError(t, err)
		w.Stop()
		assert.Equal(t, []string{"v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"}, rec.get(), "watch from %q", rv)
	}
}

// recordedWarnings keeps the warnings a client-go client received.
type recordedWarnings struct {
	mu   sync.Mutex
	list []string
}

func (r *recordedWarnings) HandleWarningHeader(_ int, _ string, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, text)
}

func (r *recordedWarnings) get() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.list
}

func rvOf(t *testing.T, rv string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(rv, 10, 64)
	require.NoError(t, err)
	return n
}

// metricValue sums a metric's samples in a Prometheus text exposition.
func metricValue(t *testing.T, exposition, name string) float64 {
	t.Helper()
	total, found := 0.0, false
	for _, m := range regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(name)+`(?:\{[^}]*\})? (\S+)$`).FindAllStringSubmatch(exposition, -1) {
		v, err := strconv.ParseFloat(m[1], 64)
		require.NoError(t, err)
		total, found = total+v, true
	}
	require.True(t, found, "no %s in the metrics", name)
	return total
}
