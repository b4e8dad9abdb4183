package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const waitFor = 10 * time.Second

type watchRun struct {
	stream   *fakeWatchStream
	cancel   context.CancelFunc
	err      error
	finished chan struct{}
}

// startWatch runs h.Watch in the background; the test's cleanup ends it.
func startWatch(t *testing.T, h *Handler, req *resourcev1.WatchRequest) *watchRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &watchRun{stream: &fakeWatchStream{ctx: ctx, ch: make(chan *resourcev1.WatchResponse, 1000)}, cancel: cancel, finished: make(chan struct{})}
	go func() {
		defer close(w.finished)
		w.err = h.Watch(req, w.stream)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-w.finished:
		case <-time.After(waitFor):
			t.Error("watch did not end after its context was canceled")
		}
	})
	return w
}

func (w *watchRun) next(t *testing.T) *resourcev1.WatchResponse {
	t.Helper()
	select {
	case m := <-w.stream.ch:
		return m
	case <-w.finished:
		select {
		case m := <-w.stream.ch:
			return m
		default:
		}
		t.Fatalf("watch ended (err %v) while an event was expected", w.err)
	case <-time.After(waitFor):
		t.Fatal("no watch event within", waitFor)
	}
	return nil
}

// ack reads the established message.
func (w *watchRun) ack(t *testing.T, contentType string) {
	t.Helper()
	m := w.next(t)
	assert.Empty(t, m.GetType(), "the first message is the established ack")
	assert.Equal(t, contentType, m.GetObject().GetContentType())
	assert.Empty(t, m.GetObject().GetData())
}

// event reads one event and decodes its ConfigMap.
func (w *watchRun) event(t *testing.T) (string, *corev1.ConfigMap) {
	t.Helper()
	m := w.next(t)
	cm := &corev1.ConfigMap{}
	decode(t, m.GetObject(), cm)
	return m.GetType(), cm
}

func (w *watchRun) expect(t *testing.T, typ, name string) *corev1.ConfigMap {
	t.Helper()
	gotType, cm := w.event(t)
	require.Equal(t, typ+" "+name, gotType+" "+cm.Name)
	return cm
}

// ended waits for the watch to return by itself.
func (w *watchRun) ended(t *testing.T) error {
	t.Helper()
	select {
	case <-w.finished:
		return w.err
	case <-time.After(waitFor):
		t.Fatal("watch did not end")
	}
	return nil
}

func watchReq(ns string, opts *resourcev1.ListOptions) *resourcev1.WatchRequest {
	return &resourcev1.WatchRequest{Ref: ref(cmResource, ns, ""), Options: opts}
}

func TestWatchFromEmptyReplaysThenLive(t *testing.T) {
	readers(t, func(t *testing.T, h *Handler) {
		ns := newNamespace(t)
		a := create(t, cmResource, ns, configMap("a", nil))
		create(t, cmResource, ns, configMap("b", nil))
		other := newNamespace(t)

		for _, rv := range []string{"", "0"} {
			t.Run("rv="+rv, func(t *testing.T) {
				w := startWatch(t, h, watchReq(ns, &resourcev1.ListOptions{ResourceVersion: rv}))
				w.ack(t, MediaJSON)
				got := w.expect(t, "ADDED", "a")
				assert.Equal(t, a.UID, got.UID)
				assert.Equal(t, a.ResourceVersion, got.ResourceVersion)
				w.expect(t, "ADDED", "b")
				w.cancel()
			})
		}

		watchers := cacheWatchers(h, cmResource)
		w := startWatch(t, h, watchReq(ns, nil))
		w.ack(t, MediaJSON)
		w.expect(t, "ADDED", "a")
		w.expect(t, "ADDED", "b")
		if h == testCachedH {
			assert.Equal(t, watchers+1, cacheWatchers(h, cmResource), "served from the watch cache")
		}

		create(t, cmResource, other, configMap("elsewhere", nil)) // another namespace: not seen
		c := create(t, cmResource, ns, configMap("c", nil))
		got := w.expect(t, "ADDED", "c")
		assert.Equal(t, c.ResourceVersion, got.ResourceVersion)

		_, err := patch(cmResource, ns, "a", mergePatchType, `{"data":{"k":"v"}}`)
		require.NoError(t, err)
		got = w.expect(t, "MODIFIED", "a")
		assert.Equal(t, "v", got.Data["k"])
		assert.Equal(t, get[*corev1.ConfigMap](t, cmResource, ns, "a").ResourceVersion, got.ResourceVersion)

		_, err = testH.Delete(context.Background(), deleteReq(cmResource, ns, "b", nil))
		require.NoError(t, err)
		got = w.expect(t, "DELETED", "b")
		assert.Equal(t, strconv.FormatInt(currentRevision(t), 10), got.ResourceVersion, "a deletion carries the deletion's revision")

		w.cancel()
		assert.NoError(t, w.ended(t))
	})
}

func TestWatchFromResourceVersion(t *testing.T) {
	readers(t, func(t *testing.T, h *Handler) {
		ns := newNamespace(t)
		first := create(t, cmResource, ns, configMap("x", nil))
		_, err := patch(cmResource, ns, "x", mergePatchType, `{"data":{"n":"1"}}`)
		require.NoError(t, err)
		create(t, cmResource, ns, configMap("y", nil))

		w := startWatch(t, h, watchReq(ns, &resourcev1.ListOptions{ResourceVersion: first.ResourceVersion}))
		w.ack(t, MediaJSON)
		// Only what happened after first: no replay of x's creation.
		got := w.expect(t, "MODIFIED", "x")
		assert.Equal(t, "1", got.Data["n"])
		w.expect(t, "ADDED", "y")
		create(t, cmResource, ns, configMap("z", nil))
		w.expect(t, "ADDED", "z")

		// From the current revision: only new events.
		w2 := startWatch(t, h, watchReq(ns, &resourcev1.ListOptions{ResourceVersion: strconv.FormatInt(currentRevision(t), 10)}))
		w2.ack(t, MediaJSON)
		_, err = testH.Delete(context.Background(), deleteReq(cmResource, ns, "z", nil))
		require.NoError(t, err)
		w2.expect(t, "DELETED", "z")
	})
}

func TestWatchSelectorTransitions(t *testing.T) {
	readers(t, func(t *testing.T, h *Handler) {
		ns := newNamespace(t)
		w := startWatch(t, h, watchReq(ns, &resourcev1.ListOptions{LabelSelector: "app=web"}))
		w.ack(t, MediaJSON)

		cm := configMap("s", nil)
		cm.Labels = map[string]string{"app": "web"}
		create(t, cmResource, ns, cm)
		w.expect(t, "ADDED", "s")
		create(t, cmResource, ns, configMap("unlabelled", nil)) // never matches

		_, err := patch(cmResource, ns, "s", mergePatchType, `{"data":{"k":"1"}}`)
		require.NoError(t, err)
		w.expect(t, "MODIFIED", "s")

		_, err = patch(cmResource, ns, "s", mergePatchType, `{"metadata":{"labels":{"app":"db"}}}`)
		require.NoError(t, err)
		got := w.expect(t, "DELETED", "s")
		assert.Equal(t, "db", got.Labels["app"], "the DELETED event carries the new state")

		_, err = patch(cmResource, ns, "s", mergePatchType, `{"data":{"k":"2"}}`) // still not matching
		require.NoError(t, err)
		_, err = patch(cmResource, ns, "s", mergePatchType, `{"metadata":{"labels":{"app":"web"}}}`)
		require.NoError(t, err)
		w.expect(t, "ADDED", "s")

		// Deleting an object that does not match is not an event for this watcher.
		_, err = testH.Delete(context.Background(), deleteReq(cmResource, ns, "unlabelled", nil))
		require.NoError(t, err)
		_, err = testH.Delete(context.Background(), deleteReq(cmResource, ns, "s", nil))
		require.NoError(t, err)
		w.expect(t, "DELETED", "s")
	})
}

func TestWatchFieldSelectorAndName(t *testing.T) {
	readers(t, func(t *testing.T, h *Handler) {
		ns := newNamespace(t)
		create(t, cmResource, ns, configMap("one", nil))
		create(t, cmResource, ns, configMap("two", nil))

		w := startWatch(t, h, watchReq(ns, &resourcev1.ListOptions{FieldSelector: "metadata.name=two"}))
		w.ack(t, MediaJSON)
		w.expect(t, "ADDED", "two")

		byName := startWatch(t, h, &resourcev1.WatchRequest{Ref: ref(cmResource, ns, "one")})
		byName.ack(t, MediaJSON)
		byName.expect(t, "ADDED", "one")

		_, err := patch(cmResource, ns, "two", mergePatchType, `{"data":{"a":"b"}}`)
		require.NoError(t, err)
		_, err = patch(cmResource, ns, "one", mergePatchType, `{"data":{"a":"b"}}`)
		require.NoError(t, err)
		w.expect(t, "MODIFIED", "two")
		byName.expect(t, "MODIFIED", "one")
	})
}

func TestWatchCompactedResourceVersion(t *testing.T) {
	ns := newNamespace(t)
	old := create(t, cmResource, ns, configMap("old", nil))
	_, err := patch(cmResource, ns, "old", mergePatchType, `{"data":{"a":"b"}}`)
	require.NoError(t, err)
	_, err = patch(cmResource, ns, "old", mergePatchType, `{"data":{"a":"c"}}`)
	require.NoError(t, err)
	compact(t)

	// Starting right at the compaction is fine; the first change's previous value is gone,
	// yet it is still a modification.
	atCompaction := startWatch(t, testH, watchReq(ns, &resourcev1.ListOptions{ResourceVersion: strconv.FormatInt(currentRevision(t)-1, 10)}))
	atCompaction.ack(t, MediaJSON)
	got := atCompaction.expect(t, "MODIFIED", "old")
	assert.Equal(t, "c", got.Data["a"])

	w := startWatch(t, testH, watchReq(ns, &resourcev1.ListOptions{ResourceVersion: old.ResourceVersion}))
	w.ack(t, MediaJSON)
	m := w.next(t)
	require.Equal(t, "ERROR", m.GetType())
	st := &metav1.Status{}
	require.NoError(t, json.Unmarshal(m.GetObject().GetData(), st))
	assert.Equal(t, "Status", st.Kind)
	assert.Equal(t, "v1", st.APIVersion)
	assert.EqualValues(t, 410, st.Code)
	assert.Equal(t, metav1.StatusReasonExpired, st.Reason)
	assert.Contains(t, st.Message, "too old resource version")
	assert.NoError(t, w.ended(t), "the watch ends after the ERROR event")
}

func TestWatchTimeoutSeconds(t *testing.T) {
	readers(t, func(t *testing.T, h *Handler) {
		ns := newNamespace(t)
		w := startWatch(t, h, &resourcev1.WatchRequest{Ref: ref(cmResource, ns, ""), TimeoutSeconds: 1})
		w.ack(t, MediaJSON)
		assert.NoError(t, w.ended(t))
	})
}

func TestWatchInitialEventsEndBookmark(t *testing.T) {
	readers(t, func(t *testing.T, h *Handler) {
		ns := newNamespace(t)
		create(t, cmResource, ns, configMap("i1", nil))
		create(t, cmResource, ns, configMap("i2", nil))
		rev := currentRevision(t)

		w := startWatch(t, h, &resourcev1.WatchRequest{Ref: ref(cmResource, ns, ""), SendInitialEvents: true, AllowWatchBookmarks: true,
			Options: &resourcev1.ListOptions{ResourceVersionMatch: "NotOlderThan"}})
		w.ack(t, MediaJSON)
		w.expect(t, "ADDED", "i1")
		w.expect(t, "ADDED", "i2")
		typ, bm := w.event(t)
		require.Equal(t, "BOOKMARK", typ)
		assert.Equal(t, "true", bm.Annotations[metav1.InitialEventsAnnotationKey])
		assert.Equal(t, "ConfigMap", bm.Kind)
		assert.Empty(t, bm.Name)
		bmRV, err := strconv.ParseInt(bm.ResourceVersion, 10, 64)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, bmRV, rev)

		create(t, cmResource, ns, configMap("i3", nil))
		w.expect(t, "ADDED", "i3")

		// Without allowWatchBookmarks there is no bookmark.
		w2 := startWatch(t, h, &resourcev1.WatchRequest{Ref: ref(cmResource, ns, ""), SendInitialEvents: true})
		w2.ack(t, MediaJSON)
		w2.expect(t, "ADDED", "i1")
		w2.expect(t, "ADDED", "i2")
		w2.expect(t, "ADDED", "i3")
		create(t, cmResource, ns, configMap("i4", nil))
		w2.expect(t, "ADDED", "i4")
	})
}

func TestWatchPeriodicBookmarks(t *testing.T) {
	readers(t, func(t *testing.T, h *Handler) {
		saved := bookmarkInterval
		bookmarkInterval = 20 * time.Millisecond
		t.Cleanup(func() { bookmarkInterval = saved })

		ns := newNamespace(t)
		w := startWatch(t, h, &resourcev1.WatchRequest{Ref: ref(cmResource, ns, ""), AllowWatchBookmarks: true,
			Options: &resourcev1.ListOptions{ResourceVersion: strconv.FormatInt(currentRevision(t), 10)}})
		w.ack(t, MediaJSON)
		created := create(t, cmResource, ns, configMap("bm", nil))
		createdRV, err := strconv.ParseInt(created.ResourceVersion, 10, 64)
		require.NoError(t, err)
		// On a busy machine the create may take longer than the interval: bookmarks that come
		// first are from before it.
		for {
			typ, obj := w.event(t)
			if typ == "ADDED" {
				require.Equal(t, "bm", obj.Name)
				break
			}
			require.Equal(t, "BOOKMARK", typ)
			rv, err := strconv.ParseInt(obj.ResourceVersion, 10, 64)
			require.NoError(t, err)
			require.Less(t, rv, createdRV, "a bookmark before the event is from before it")
		}
		for i := 0; ; i++ {
			require.Less(t, i, 1000, "no bookmark at the last event's revision")
			typ, bm := w.event(t)
			require.Equal(t, "BOOKMARK", typ)
			assert.Nil(t, bm.Annotations)
			if bm.ResourceVersion == created.ResourceVersion {
				break
			}
		}
		w.cancel()
		<-w.finished
	})
}

func TestWatchEncodings(t *testing.T) {
	readers(t, func(t *testing.T, h *Handler) {
		ns := newNamespace(t)
		create(t, cmResource, ns, configMap("t1", map[string]string{"a": "b"}))

		w := startWatch(t, h, &resourcev1.WatchRequest{Ref: ref(cmResource, ns, ""),
			Encoding: &resourcev1.Encoding{Accept: "application/json;as=Table;g=meta.k8s.io;v=v1"}})
		w.ack(t, MediaJSON)
		m := w.next(t)
		assert.Equal(t, "ADDED", m.GetType())
		tbl := &metav1.Table{}
		require.NoError(t, json.Unmarshal(m.GetObject().GetData(), tbl))
		assert.Len(t, tbl.ColumnDefinitions, 3, "the first Table event carries the columns")
		require.Len(t, tbl.Rows, 1)
		assert.Equal(t, "t1", tbl.Rows[0].Cells[0])
		create(t, cmResource, ns, configMap("t2", nil))
		m = w.next(t)
		tbl = &metav1.Table{}
		require.NoError(t, json.Unmarshal(m.GetObject().GetData(), tbl))
		assert.Empty(t, tbl.ColumnDefinitions, "later events do not")
		assert.Equal(t, "t2", tbl.Rows[0].Cells[0])

		pw := startWatch(t, h, &resourcev1.WatchRequest{Ref: ref(cmResource, ns, ""), Encoding: &resourcev1.Encoding{Accept: MediaProtobuf}})
		pw.ack(t, MediaProtobuf)
		typ, cm := pw.event(t)
		assert.Equal(t, "ADDED", typ)
		assert.Equal(t, "t1", cm.Name)
	})
}

func TestWatchBadRequests(t *testing.T) {
	readers(t, func(t *testing.T, h *Handler) {
		ns := newNamespace(t)
		tests := []struct {
			name string
			req  *resourcev1.WatchRequest
			code int32
		}{
			{"bad label selector", watchReq(ns, &resourcev1.ListOptions{LabelSelector: "a=("}), 400},
			{"unsupported field", watchReq(ns, &resourcev1.ListOptions{FieldSelector: "data.a=b"}), 400},
			{"bad resourceVersion", watchReq(ns, &resourcev1.ListOptions{ResourceVersion: "x"}), 400},
			{"not acceptable", &resourcev1.WatchRequest{Ref: ref(cmResource, ns, ""), Encoding: &resourcev1.Encoding{Accept: "text/html"}}, 406},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				w := startWatch(t, h, tc.req)
				err := w.ended(t)
				st := kubeStatus(t, err)
				assert.Equal(t, tc.code, st.Code)
				assert.Empty(t, w.stream.ch, "nothing is sent before a request error")
			})
		}
	})
}

func TestWatchEndsWhenServerStops(t *testing.T) {
	for _, cached := range []bool{false, true} {
		stopping := make(chan struct{})
		h := NewHandler(testScheme, testSet, testStore, stopping)
		if cached {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			h.EnableWatchCache(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)))
		}
		ns := newNamespace(t)
		create(t, cmResource, ns, configMap(fmt.Sprintf("stop-%v", cached), nil))
		w := startWatch(t, h, watchReq(ns, nil))
		w.ack(t, MediaJSON)
		w.expect(t, "ADDED", fmt.Sprintf("stop-%v", cached))
		close(stopping)
		assert.NoError(t, w.ended(t))
	}
}
