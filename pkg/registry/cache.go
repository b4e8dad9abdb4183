package registry

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apichain/apichain/pkg/storage"
	"github.com/google/btree"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// cacheCapacity is how many recent events a resource's watch cache keeps, so watchers that
// resume from a recent resourceVersion are served without etcd.
const cacheCapacity = 1024

// snapshotTTL is how long a paginated list's snapshot serves its continuations (kube's watch
// cache keeps as much history); maxSnapshots bounds how many are kept at once. A
// continuation without its snapshot reads etcd at the list's revision instead.
const (
	snapshotTTL  = 75 * time.Second
	maxSnapshots = 64
)

// watcherBuffer is how far a watcher may lag before it is closed (clients re-watch, as
// with kube's watch cache).
const watcherBuffer = 256

// errCacheNotReady means the cache cannot answer (yet); callers fall back to etcd.
var errCacheNotReady = errors.New("watch cache not ready")

// cacheEvent is one change kept by the cache; objects are shared and read-only.
type cacheEvent struct {
	typ     storage.EventType
	key     string
	obj     runtime.Object
	prev    runtime.Object // the object before a modification, for selector transitions
	rev     int64
	created bool
	// encoded is the object's encodings, made once for all the event's watchers (nil: each
	// watcher encodes it).
	encoded *encodings
}

// encodings are an object encoded once per output and shared by the watchers it goes to, as
// kube's watch cache shares a cachingObject's serializations: a thousand watchers cost one
// encoding, not a thousand. A cached object's are shared by the lists it is an item of, as
// far as the process's budget allows (itemBudget).
type encodings struct {
	mu sync.Mutex
	m  []encoding // a few at most: a slice, not a map, since every cached object has one
	// budget is what the encodings of a cached object count against (appendTo); an event's
	// have none (get). released: the object left the cache, and its encodings count no more (a
	// snapshot's list may still encode it).
	budget   *encodingBudget
	released bool
}

type encoding struct {
	o    output
	data []byte
}

// itemEncodingsOf are the encodings of an object in the cache's tree, kept within the
// process's budget (appendTo).
func itemEncodingsOf() *encodings { return &encodings{budget: itemBudget} }

// get is the object's encoding for o, made by encode the first time (an event's, for its
// watchers: watchers asking at once wait for the one encoding).
func (e *encodings) get(o output, encode func() ([]byte, error)) ([]byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if data, ok := e.keptLocked(o); ok {
		return data, nil
	}
	data, err := encode()
	if err != nil {
		return nil, err
	}
	e.m = append(e.m, encoding{o, data})
	return data, nil
}

// kept is the object's encoding for o, if one is kept.
func (e *encodings) kept(o output) ([]byte, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.keptLocked(o)
}

func (e *encodings) keptLocked(o output) ([]byte, bool) {
	for _, enc := range e.m {
		if enc.o == o {
			return enc.data, true
		}
	}
	return nil, false
}

// appendTo appends the object's encoding for o to out: the kept one, or one encode appends
// now, of which a copy is kept if the budget has room. Lists asking at once wait for the one
// encoding, as watchers do (get), unless the budget keeps none.
func (e *encodings) appendTo(o output, out []byte, encode func([]byte) ([]byte, error)) ([]byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if data, ok := e.keptLocked(o); ok {
		return append(out, data...), nil
	}
	start := len(out)
	out, err := encode(out)
	if err != nil {
		return nil, err
	}
	if data := out[start:]; !e.released && e.budget.take(int64(len(data))) {
		e.m = append(e.m, encoding{o, bytes.Clone(data)})
	}
	return out, nil
}

// release gives the budget back what the encodings hold, and keeps none from now on.
func (e *encodings) release() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.budget == nil || e.released {
		return
	}
	e.released = true
	var n int64
	for _, enc := range e.m {
		n += int64(len(enc.data))
	}
	e.m = nil
	e.budget.give(n)
}

// releaseAll releases the encodings of every object in t, a tree the cache no longer keeps.
func releaseAll(t *objectTree) {
	t.Ascend(func(e cacheEntry) bool {
		e.enc.release()
		return true
	})
}

// cacheEntry is one object in the cache's tree, by key, with its encodings: a list's items
// are each encoded once for all the lists they are in, until the object changes. (Not its
// event's: those, for watchers, go with the event history.)
type cacheEntry struct {
	key string
	obj runtime.Object
	enc *encodings
}

func entryLess(a, b cacheEntry) bool { return a.key < b.key }

// objectTree is the cache's objects sorted by key: a copy-on-write B-tree, so a snapshot of
// it costs nothing until the cache changes, and then only the nodes it changes.
type objectTree = btree.BTreeG[cacheEntry]

func newObjectTree() *objectTree { return btree.NewG(32, entryLess) }

// cacheSnapshot is the cache's objects at one revision, kept for a paginated list's pages.
type cacheSnapshot struct {
	tree  *objectTree
	taken time.Time
}

// watchCache mirrors one resource in memory from a single etcd watch, so lists at
// resourceVersion 0 or "" (every page of a paginated one) and watches from recent versions do
// not each hit etcd.
type watchCache struct {
	h       *Handler
	r       *Resource
	log     *slog.Logger
	metrics *cacheMetrics

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every revision change
	ready    bool
	rev      int64
	objects  *objectTree
	events   []cacheEvent // ring of the latest events, oldest first
	watchers map[*cacheWatcher]struct{}
	// snapshots are the objects at the revisions of paginated lists being read.
	snapshots map[int64]*cacheSnapshot
}

type cacheWatcher struct {
	ch     chan cacheEvent
	prefix string // the watch's key prefix: one namespace's, or the resource's
	closed bool
}

func newWatchCache(h *Handler, r *Resource, log *slog.Logger) *watchCache {
	return &watchCache{h: h, r: r, log: log, metrics: newCacheMetrics(r.GroupResource()), changed: make(chan struct{}), objects: newObjectTree(),
		watchers: map[*cacheWatcher]struct{}{}, snapshots: map[int64]*cacheSnapshot{}}
}

// run keeps the cache in sync until ctx is done: list, then watch from the list's revision;
// on any watch failure it closes every watcher and starts over.
func (c *watchCache) run(ctx context.Context) {
	for ctx.Err() == nil {
		if err := c.sync(ctx); err != nil && ctx.Err() == nil {
			c.log.Debug("watch cache restarting", "resource", c.r.Name, "err", err)
		}
		c.reset()
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	c.mu.Lock()
	old := c.objects
	c.objects = newObjectTree()
	c.mu.Unlock()
	releaseAll(old) // the cache is dropped: its encodings count no more
}

// stream is the cache's own etcd watch stream (storage.WatchStream): its progress requests
// are answered as soon as its one watch has caught up, whatever other watches do.
func (c *watchCache) stream(ctx context.Context) context.Context {
	return storage.WatchStream(ctx, "watch-cache/"+c.r.GroupResource().String())
}

func (c *watchCache) sync(ctx context.Context) error {
	start := time.Now()
	// The watch first, from the present, then the list at the revision it starts after: a
	// list first would leave the watch behind etcd's revision, and etcd answers no progress
	// request until its next sync (100 ms) catches it up, so consistent reads would wait.
	wctx, cancel := context.WithCancel(c.stream(ctx))
	defer cancel()
	rev, events, page, objects, err := c.initialize(ctx, wctx)
	c.metrics.initialized(start, err)
	if err != nil {
		return err
	}
	c.mu.Lock()
	old := c.objects
	c.objects, c.rev, c.ready, c.events = objects, page.Revision, true, nil
	c.notifyLocked()
	c.mu.Unlock()
	releaseAll(old)
	countObjects(c.r, objects.Len())
	c.metrics.revision(page.Revision)
	c.log.Info("Caches are synced", "resource", c.r.GroupResource().String(), "objects", objects.Len(), "resourceVersion", page.Revision)
	// A watch that etcd ends (its member lost the leader, the connection broke) is taken up
	// again from the cache's revision, so the cache and its watchers ride through it; only a
	// compaction past that revision means listing again.
	for {
		err := ctx.Err()
		for ev := range events {
			if err = ev.Err; err != nil {
				break
			}
			if ev.ModRevision <= rev {
				continue // in the list already (a write while etcd set the watch up)
			}
			if err := c.apply(ev); err != nil {
				return err
			}
		}
		if ctx.Err() != nil || errors.Is(err, storage.ErrCompacted) {
			return err
		}
		c.mu.Lock()
		from := c.rev
		c.mu.Unlock()
		c.log.Debug("watch cache resuming its watch", "resource", c.r.Name, "resourceVersion", from, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
		events = c.h.store.Watch(wctx, prefix(c.r, ""), from)
	}
}

// initialize starts the cache's watch (under wctx) and lists what it starts after.
func (c *watchCache) initialize(ctx, wctx context.Context) (int64, <-chan storage.Event, *storage.ListResult, *objectTree, error) {
	rev, events, err := c.h.store.WatchNow(wctx, prefix(c.r, ""))
	if err != nil {
		return 0, nil, nil, nil, err
	}
	page, err := c.h.store.List(ctx, prefix(c.r, ""), rev, "", 0)
	if err != nil {
		return 0, nil, nil, nil, err
	}
	objects := newObjectTree()
	for _, kv := range page.KVs {
		obj, err := c.h.decodeStored(c.r, kv.Value, kv.ModRevision)
		if err != nil {
			return 0, nil, nil, nil, err
		}
		objects.ReplaceOrInsert(cacheEntry{key: kv.Key, obj: obj, enc: itemEncodingsOf()})
	}
	return rev, events, page, objects, nil
}

func (c *watchCache) apply(ev storage.Event) error {
	if ev.Type == storage.Progress {
		c.mu.Lock()
		if ev.ModRevision > c.rev {
			c.rev = ev.ModRevision
			c.notifyLocked()
			c.metrics.revision(ev.ModRevision)
		}
		c.mu.Unlock()
		return nil
	}
	c.metrics.received.Inc()
	obj, err := c.h.decodeStored(c.r, ev.Value, ev.ModRevision)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ce := cacheEvent{typ: ev.Type, key: ev.Key, obj: obj, rev: ev.ModRevision, created: ev.Created, encoded: &encodings{}}
	if ev.Type == storage.Deleted {
		if prev, ok := c.objects.Delete(cacheEntry{key: ev.Key}); ok {
			ce.prev = prev.obj
			prev.enc.release()
		}
	} else if prev, ok := c.objects.ReplaceOrInsert(cacheEntry{key: ev.Key, obj: obj, enc: itemEncodingsOf()}); ok {
		ce.prev = prev.obj
		prev.enc.release()
	}
	if ev.Type == storage.Deleted || ce.prev == nil {
		countObjects(c.r, c.objects.Len())
	}
	c.events = append(c.events, ce)
	if len(c.events) > cacheCapacity {
		c.events = c.events[len(c.events)-cacheCapacity:]
	}
	c.rev = ev.ModRevision
	for w := range c.watchers {
		if !strings.HasPrefix(ce.key, w.prefix) {
			continue // another namespace's object
		}
		select {
		case w.ch <- ce:
		default: // too slow: end its watch; the client resumes from its last version
			c.closeLocked(w)
		}
	}
	c.notifyLocked()
	c.metrics.dispatched.Inc()
	c.metrics.revision(ev.ModRevision)
	return nil
}

func (c *watchCache) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *watchCache) closeLocked(w *cacheWatcher) {
	if !w.closed {
		w.closed = true
		close(w.ch)
		delete(c.watchers, w)
	}
}

func (c *watchCache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ready = false
	for w := range c.watchers {
		c.closeLocked(w)
	}
}

// blockTimeout is how long a read waits for the cache to reach the version it asks for
// (kube's watch cache waits as long).
const blockTimeout = 3 * time.Second

// waitFresh waits until the cache has seen revision rev, asking etcd for a progress
// notification if the resource is quiet. After timeout it gives up: with
// errCacheNotReady while the cache is not synced, otherwise with kube's "Too large resource
// version" naming the cache's revision.
// consistentReadTimeout is how long a most-recent read waits for the cache to reach etcd's
// current revision before etcd serves it instead. etcd ignores a progress request while the
// watch stream catches up with a burst of writes, so waiting longer would only delay it.
const consistentReadTimeout = 100 * time.Millisecond

// progressRetry is how often a waiting read asks etcd again for a progress notification.
const progressRetry = 20 * time.Millisecond

func (c *watchCache) waitFresh(ctx context.Context, rev uint64, timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	// etcd ignores a progress request while the watch stream is busy with a burst of writes
	// (to any key: other kinds' writes move the revision too), so ask again every
	// progressRetry until the cache has caught up.
	retry := time.NewTicker(progressRetry)
	defer retry.Stop()
	asked, expired := false, false
	start, waited := time.Now(), false
	defer func() {
		if waited {
			c.metrics.readWait.Observe(time.Since(start).Seconds())
		}
	}()
	for {
		c.mu.Lock()
		ready, current, changed := c.ready, c.rev, c.changed
		c.mu.Unlock()
		switch {
		case ready && uint64(current) >= rev:
			return nil
		case expired && !ready:
			return errCacheNotReady
		case expired:
			return tooLargeResourceVersion(rev, uint64(current), resourceVersionTooHighRetrySeconds)
		}
		waited = true
		if ready && !asked {
			asked = true
			_ = c.h.store.RequestProgress(c.stream(ctx))
		}
		select {
		case <-changed:
		case <-retry.C:
			asked = false
		case <-deadline.C:
			expired = true // one more look: the cache may have caught up meanwhile
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// get serves a GET with resourceVersion rv ("0" or a minimum) as kube's cacher does: once
// the cache has seen rv, waiting up to blockTimeout for it. errCacheNotReady means the cache
// is not synced and etcd must serve it (kube's delegator does the same).
func (c *watchCache) get(ctx context.Context, namespace, name, rv string) (runtime.Object, error) {
	c.mu.Lock()
	ready := c.ready
	c.mu.Unlock()
	if !ready {
		return nil, errCacheNotReady
	}
	minimum, err := parseMinimumRV(rv)
	if err != nil {
		// kube's cacher returns its storage.InvalidError as is, and kube answers that with 422.
		return nil, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure,
			Code: http.StatusUnprocessableEntity, Reason: metav1.StatusReasonInvalid, Message: err.Error()}}
	}
	if err := c.waitFresh(ctx, minimum, blockTimeout); err != nil {
		if err == errCacheNotReady {
			return nil, err
		}
		return nil, storeError(err, c.r.GroupResource(), name)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.objects.Get(cacheEntry{key: key(c.r, namespace, name)})
	switch {
	case !c.ready:
		return nil, errCacheNotReady
	case !ok:
		return nil, apierrors.NewNotFound(c.r.GroupResource(), name)
	}
	return e.obj.DeepCopyObject(), nil // cached objects are shared
}

// snapshot returns the cache's objects and revision now: a copy-on-write view that the
// cache's later changes leave as it is.
func (c *watchCache) snapshot() (*objectTree, int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ready {
		return nil, 0, errCacheNotReady
	}
	return c.objects.Clone(), c.rev, nil
}

// keepSnapshot keeps t, the objects at rev, for the continuations of a paginated list;
// snapshots go after snapshotTTL, and the oldest first beyond maxSnapshots.
func (c *watchCache) keepSnapshot(rev int64, t *objectTree) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if s, ok := c.snapshots[rev]; ok {
		s.taken = now
		return
	}
	c.snapshots[rev] = &cacheSnapshot{tree: t, taken: now}
	var oldest int64
	for r, s := range c.snapshots {
		if now.Sub(s.taken) > snapshotTTL {
			delete(c.snapshots, r)
		} else if oldest == 0 || s.taken.Before(c.snapshots[oldest].taken) {
			oldest = r
		}
	}
	if len(c.snapshots) > maxSnapshots {
		delete(c.snapshots, oldest)
	}
}

// snapshotAt is the snapshot kept for revision rev, if any.
func (c *watchCache) snapshotAt(rev int64) (*objectTree, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.snapshots[rev]
	if !ok || time.Since(s.taken) > snapshotTTL {
		return nil, false
	}
	return s.tree, true
}

// watch registers a watcher. replay=true starts with the objects under keyPrefix as ADDED
// (returned as events with created=true); otherwise it starts after revision from, which
// must still be in the ring (errCacheNotReady if not: the caller falls back to etcd).
func (c *watchCache) watch(keyPrefix string, from int64, replay bool) ([]cacheEvent, *cacheWatcher, int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ready {
		return nil, nil, 0, errCacheNotReady
	}
	var initial []cacheEvent
	if replay {
		c.objects.AscendGreaterOrEqual(cacheEntry{key: keyPrefix}, func(e cacheEntry) bool {
			if !strings.HasPrefix(e.key, keyPrefix) {
				return false
			}
			initial = append(initial, cacheEvent{typ: storage.Put, key: e.key, obj: e.obj, rev: c.rev, created: true})
			return true
		})
	} else {
		if from > c.rev {
			return nil, nil, 0, errCacheNotReady // the cache has not seen that version yet
		}
		oldest := c.rev
		if len(c.events) > 0 {
			oldest = c.events[0].rev - 1
		}
		if from < oldest {
			return nil, nil, 0, errCacheNotReady // older than the ring: etcd decides (or 410)
		}
		for _, e := range c.events {
			if e.rev > from && strings.HasPrefix(e.key, keyPrefix) {
				initial = append(initial, e)
			}
		}
	}
	w := &cacheWatcher{ch: make(chan cacheEvent, watcherBuffer), prefix: keyPrefix}
	c.watchers[w] = struct{}{}
	return initial, w, c.rev, nil
}

func (c *watchCache) stop(w *cacheWatcher) {
	c.mu.Lock()
	c.closeLocked(w)
	c.mu.Unlock()
}

// caches holds a handler's watch caches, started on first use.
type caches struct {
	mu  sync.Mutex
	ctx context.Context
	log *slog.Logger
	m   map[*Resource]*watchCache
	// stop ends a resource's cache (and the watches it serves) when the resource goes away.
	stop map[*Resource]context.CancelFunc
}

// EnableWatchCache makes the handler serve lists and watches from per-resource caches that
// live until ctx is done.
func (h *Handler) EnableWatchCache(ctx context.Context, log *slog.Logger) {
	h.caches.Store(&caches{ctx: ctx, log: log, m: map[*Resource]*watchCache{}, stop: map[*Resource]context.CancelFunc{}})
}

// dropCaches stops the caches of resources that are no longer in set.
func (h *Handler) dropCaches(set *Set) {
	cs := h.caches.Load()
	if cs == nil {
		return
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for r, stop := range cs.stop {
		if served, ok := set.Lookup(r.GroupVersionResource()); !ok || served != r {
			stop()
			delete(cs.stop, r)
			delete(cs.m, r)
		}
	}
}

// cache returns r's watch cache (starting it), or nil when caching is off.
func (h *Handler) cache(r *Resource) *watchCache {
	cs := h.caches.Load()
	if cs == nil || !r.stored() || r.ConvertVersion != nil || cs.ctx.Err() != nil {
		return nil
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	c, ok := cs.m[r]
	if !ok {
		c = newWatchCache(h, r, cs.log)
		ctx, stop := context.WithCancel(cs.ctx)
		cs.m[r], cs.stop[r] = c, stop
		go c.run(ctx)
	}
	return c
}

// cachedObject returns a copy of the object at key in r's watch cache and its version, when
// the cache is running (it is not started for this) and holds it.
func (h *Handler) cachedObject(r *Resource, key string) (runtime.Object, int64, bool) {
	cs := h.caches.Load()
	if cs == nil {
		return nil, 0, false
	}
	cs.mu.Lock()
	c := cs.m[r]
	cs.mu.Unlock()
	if c == nil {
		return nil, 0, false
	}
	c.mu.Lock()
	e, ok := c.objects.Get(cacheEntry{key: key})
	ok = ok && c.ready
	c.mu.Unlock()
	if !ok {
		return nil, 0, false
	}
	acc, err := meta.Accessor(e.obj)
	if err != nil {
		return nil, 0, false
	}
	rev, err := strconv.ParseInt(acc.GetResourceVersion(), 10, 64)
	if err != nil {
		return nil, 0, false
	}
	return e.obj.DeepCopyObject(), rev, true
}
