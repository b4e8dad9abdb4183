package storage

import (
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apichain/apichain/pkg/embedded/embeddedtest"
	"github.com/apichain/apichain/pkg/healthz"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
)

var (
	testClient *clientv3.Client
	testStore  *Store
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	endpoints, stopEtcd, err := embeddedtest.Etcd()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stopEtcd()
	testClient, err = NewClient(endpoints, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer testClient.Close()
	testStore = NewStore(testClient, DefaultPrefix)
	return m.Run()
}

var runs atomic.Int64

// prefix is a key prefix of the test's own (per run, so -count reruns start clean).
func prefix(t *testing.T) string {
	return fmt.Sprintf("/test/%d/%s/", runs.Add(1), strings.ReplaceAll(t.Name(), "/", "_"))
}

func TestReadiness(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, Ping(ctx, testClient))
	require.NoError(t, WaitReady(ctx, testClient))
	check := HealthCheck(testClient)
	assert.Equal(t, "etcd", check.Name())
	assert.Empty(t, check.(healthz.Noter).Note(), "no round trip measured yet")
	require.NoError(t, check.Check(httptest.NewRequest("GET", "/readyz", nil)))
	assert.Regexp(t, `^round trip [0-9.]+(µs|ms|s)$`, check.(healthz.Noter).Note())

	// A port that was free a moment ago: nothing answers there.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	dead, err := NewClient([]string{"http://" + addr}, nil)
	require.NoError(t, err)
	defer dead.Close()
	short, cancelShort := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancelShort()
	assert.Error(t, Ping(short, dead))
	assert.ErrorIs(t, WaitReady(short, dead), context.DeadlineExceeded)
}

func TestCreateGet(t *testing.T) {
	ctx := context.Background()
	k := prefix(t) + "a"
	rev, err := testStore.Create(ctx, k, []byte("v1"))
	require.NoError(t, err)
	cur, err := testStore.CurrentRevision(ctx)
	require.NoError(t, err)
	assert.Equal(t, cur, rev)

	kv, headerRev, err := testStore.Get(ctx, k, 0)
	require.NoError(t, err)
	assert.Equal(t, k, kv.Key)
	assert.Equal(t, []byte("v1"), kv.Value)
	assert.Equal(t, rev, kv.ModRevision)
	assert.GreaterOrEqual(t, headerRev, rev)

	_, err = testStore.Create(ctx, k, []byte("again"))
	assert.ErrorIs(t, err, ErrAlreadyExists)

	_, headerRev, err = testStore.Get(ctx, prefix(t)+"missing", 0)
	assert.ErrorIs(t, err, ErrNotFound)
	assert.Positive(t, headerRev, "a miss still reports the revision")

	// A read at an older revision sees the older value.
	_, err = testStore.Update(ctx, k, []byte("v2"), rev)
	require.NoError(t, err)
	kv, _, err = testStore.Get(ctx, k, rev)
	require.NoError(t, err)
	assert.Equal(t, []byte("v1"), kv.Value)
	_, _, err = testStore.Get(ctx, k, rev-1)
	assert.ErrorIs(t, err, ErrNotFound, "before its creation the key did not exist")

	_, _, err = testStore.Get(ctx, k, cur+1000)
	assert.ErrorIs(t, err, ErrFutureRV)
}

func TestUpdate(t *testing.T) {
	ctx := context.Background()
	k := prefix(t) + "a"
	rev, err := testStore.Create(ctx, k, []byte("v1"))
	require.NoError(t, err)

	rev2, err := testStore.Update(ctx, k, []byte("v2"), rev)
	require.NoError(t, err)
	assert.Greater(t, rev2, rev)

	_, err = testStore.Update(ctx, k, []byte("stale"), rev)
	assert.ErrorIs(t, err, ErrConflict)
	kv, _, err := testStore.Get(ctx, k, 0)
	require.NoError(t, err)
	assert.Equal(t, []byte("v2"), kv.Value)

	_, err = testStore.Update(ctx, prefix(t)+"missing", []byte("x"), rev)
	assert.ErrorIs(t, err, ErrNotFound)
}

func TestDelete(t *testing.T) {
	ctx := context.Background()
	k := prefix(t) + "a"
	rev, err := testStore.Create(ctx, k, []byte("v1"))
	require.NoError(t, err)

	_, err = testStore.Delete(ctx, k, rev-1)
	assert.ErrorIs(t, err, ErrConflict)
	delRev, err := testStore.Delete(ctx, k, rev)
	require.NoError(t, err)
	assert.Greater(t, delRev, rev)
	_, _, err = testStore.Get(ctx, k, 0)
	assert.ErrorIs(t, err, ErrNotFound)

	_, err = testStore.Delete(ctx, k, 0)
	assert.ErrorIs(t, err, ErrNotFound)
	_, err = testStore.Delete(ctx, k, rev)
	assert.ErrorIs(t, err, ErrNotFound)

	// expected 0: whatever the version.
	_, err = testStore.Create(ctx, k, []byte("v2"))
	require.NoError(t, err)
	_, err = testStore.Delete(ctx, k, 0)
	assert.NoError(t, err)
}

func TestList(t *testing.T) {
	ctx := context.Background()
	p := prefix(t)
	for i := range 7 {
		_, err := testStore.Create(ctx, fmt.Sprintf("%sk%d", p, i), []byte{byte('0' + i)})
		require.NoError(t, err)
	}
	// A sibling whose name extends the prefix must not be listed.
	_, err := testStore.Create(ctx, strings.TrimSuffix(p, "/")+"x/k0", []byte("sibling"))
	require.NoError(t, err)

	all, err := testStore.List(ctx, p, 0, "", 0)
	require.NoError(t, err)
	require.Len(t, all.KVs, 7)
	assert.False(t, all.More)
	assert.Zero(t, all.Remaining)
	cur, err := testStore.CurrentRevision(ctx)
	require.NoError(t, err)
	assert.Equal(t, cur, all.Revision)

	// The prefix without its slash means the same.
	again, err := testStore.List(ctx, strings.TrimSuffix(p, "/"), 0, "", 0)
	require.NoError(t, err)
	assert.Len(t, again.KVs, 7)

	// Pages: startKey is exclusive, More and Remaining count what is left.
	page, err := testStore.List(ctx, p, 0, "", 3)
	require.NoError(t, err)
	require.Len(t, page.KVs, 3)
	assert.True(t, page.More)
	assert.EqualValues(t, 4, page.Remaining)
	page2, err := testStore.List(ctx, p, page.Revision, page.KVs[2].Key, 3)
	require.NoError(t, err)
	require.Len(t, page2.KVs, 3)
	assert.Equal(t, p+"k3", page2.KVs[0].Key)
	assert.EqualValues(t, 1, page2.Remaining)
	assert.Equal(t, page.Revision, page2.Revision)
	page3, err := testStore.List(ctx, p, page.Revision, page2.KVs[2].Key, 3)
	require.NoError(t, err)
	require.Len(t, page3.KVs, 1)
	assert.False(t, page3.More)

	// A list at an older revision is a snapshot.
	_, err = testStore.Create(ctx, p+"k9", []byte("later"))
	require.NoError(t, err)
	_, err = testStore.Delete(ctx, p+"k0", 0)
	require.NoError(t, err)
	old, err := testStore.List(ctx, p, all.Revision, "", 0)
	require.NoError(t, err)
	assert.Len(t, old.KVs, 7)
	assert.Equal(t, p+"k0", old.KVs[0].Key)
	assert.Equal(t, all.Revision, old.Revision)

	_, err = testStore.List(ctx, p, cur+1000, "", 0)
	assert.ErrorIs(t, err, ErrFutureRV)

	empty, err := testStore.List(ctx, p+"nothing/", 0, "", 5)
	require.NoError(t, err)
	assert.Empty(t, empty.KVs)
	assert.False(t, empty.More)
}

func TestListCompacted(t *testing.T) {
	ctx := context.Background()
	p := prefix(t)
	rev, err := testStore.Create(ctx, p+"a", []byte("1"))
	require.NoError(t, err)
	rev2, err := testStore.Update(ctx, p+"a", []byte("2"), rev)
	require.NoError(t, err)
	_, err = testClient.Compact(ctx, rev2, clientv3.WithCompactPhysical())
	require.NoError(t, err)

	_, err = testStore.List(ctx, p, rev, "", 0)
	assert.ErrorIs(t, err, ErrCompacted)
	_, _, err = testStore.Get(ctx, p+"a", rev)
	assert.ErrorIs(t, err, ErrCompacted)
	page, err := testStore.List(ctx, p, rev2, "", 0)
	require.NoError(t, err, "the compaction revision itself is still readable")
	assert.Equal(t, []byte("2"), page.KVs[0].Value)
}

// nextEvent reads the next change, skipping progress notifications.
func nextEvent(t *testing.T, ch <-chan Event) Event {
	t.Helper()
	for {
		select {
		case ev, ok := <-ch:
			require.True(t, ok, "watch channel closed")
			if ev.Type == Progress && ev.Err == nil {
				continue
			}
			return ev
		case <-time.After(10 * time.Second):
			t.Fatal("no watch event")
		}
	}
}

func TestWatch(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := prefix(t)
	before, err := testStore.CurrentRevision(ctx)
	require.NoError(t, err)
	ch := testStore.Watch(ctx, p, before)

	rev, err := testStore.Create(ctx, p+"a", []byte("v1"))
	require.NoError(t, err)
	_, err = testStore.Create(ctx, prefix(t)+"other", []byte("x")) // a fresh prefix: outside p
	require.NoError(t, err)
	rev2, err := testStore.Update(ctx, p+"a", []byte("v2"), rev)
	require.NoError(t, err)
	rev3, err := testStore.Delete(ctx, p+"a", 0)
	require.NoError(t, err)

	ev := nextEvent(t, ch)
	assert.Equal(t, Event{Type: Put, Key: p + "a", Value: []byte("v1"), ModRevision: rev, Created: true}, ev)
	ev = nextEvent(t, ch)
	assert.Equal(t, Event{Type: Put, Key: p + "a", Value: []byte("v2"), PrevValue: []byte("v1"), ModRevision: rev2}, ev)
	ev = nextEvent(t, ch)
	assert.Equal(t, Event{Type: Deleted, Key: p + "a", Value: []byte("v2"), ModRevision: rev3}, ev, "a deletion carries the last value")

	// From a revision: only what came after it.
	from := testStore.Watch(ctx, p, rev)
	ev = nextEvent(t, from)
	assert.Equal(t, rev2, ev.ModRevision)

	// Canceling closes the channel.
	cancel()
	require.Eventually(t, func() bool {
		select {
		case _, ok := <-ch:
			return !ok
		default:
			return false
		}
	}, 10*time.Second, time.Millisecond)
}

func TestWatchCompacted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := prefix(t)
	rev, err := testStore.Create(ctx, p+"a", []byte("1"))
	require.NoError(t, err)
	_, err = testStore.Update(ctx, p+"a", []byte("2"), rev)
	require.NoError(t, err)
	rev3, err := testStore.Update(ctx, p+"a", []byte("3"), rev+1)
	require.NoError(t, err)
	_, err = testClient.Compact(ctx, rev3, clientv3.WithCompactPhysical())
	require.NoError(t, err)

	ch := testStore.Watch(ctx, p, rev)
	ev := nextEvent(t, ch)
	assert.ErrorIs(t, ev.Err, ErrCompacted)
	select {
	case _, ok := <-ch:
		assert.False(t, ok, "the channel closes after the error")
	case <-time.After(10 * time.Second):
		t.Fatal("channel not closed after a terminal error")
	}
}

func TestMapErr(t *testing.T) {
	assert.NoError(t, mapErr(nil))
	assert.ErrorContains(t, mapErr(fmt.Errorf("boom")), "etcd: boom")
}

func TestWatchProgress(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := prefix(t)
	ch := testStore.Watch(ctx, p, 0)
	// Nothing changes under p, yet a progress request tells the watcher etcd's revision.
	awaitProgress(t, ch, func() error { return testStore.RequestProgress(ctx) })
}

// awaitProgress writes outside the watch's prefix and asks for progress with request until
// the watch ch reports etcd's revision after that write.
func awaitProgress(t *testing.T, ch <-chan Event, request func() error) {
	ctx := context.Background()
	_, err := testStore.Create(ctx, prefix(t)+"other", []byte("x"))
	require.NoError(t, err)
	cur, err := testStore.CurrentRevision(ctx)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		if err := request(); err != nil {
			return false
		}
		select {
		case ev := <-ch:
			require.NoError(t, ev.Err)
			require.Equal(t, Progress, ev.Type)
			return ev.ModRevision >= cur
		case <-time.After(100 * time.Millisecond):
			return false
		}
	}, 10*time.Second, 10*time.Millisecond)
}

// A watch from the present plus a list at the revision it starts after miss no write and
// report none twice, however the writes interleave with setting them up.
func TestWatchNowMissesNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := prefix(t)
	const writes = 200
	done := make(chan error, 1)
	go func() {
		for i := range writes {
			if _, err := testStore.Create(ctx, fmt.Sprintf("%s%03d", p, i), []byte("v")); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for i := 0; i < writes/4; i++ { // set up while the writer is under way
		if _, err := testStore.CurrentRevision(ctx); err != nil {
			t.Fatal(err)
		}
	}
	rev, events, err := testStore.WatchNow(ctx, p)
	require.NoError(t, err)
	list, err := testStore.List(ctx, p, rev, "", 0)
	require.NoError(t, err)
	assert.Equal(t, rev, list.Revision)
	seen := map[string]int{}
	for _, kv := range list.KVs {
		seen[kv.Key]++
	}
	require.NoError(t, <-done)
	for len(seen) < writes {
		ev := nextEvent(t, events)
		require.NoError(t, ev.Err)
		if ev.Type == Progress || ev.ModRevision <= rev {
			continue
		}
		seen[ev.Key]++
	}
	for k, n := range seen {
		assert.Equal(t, 1, n, k)
	}

	gone, stop := context.WithCancel(ctx)
	stop()
	_, _, err = testStore.WatchNow(gone, p)
	assert.ErrorIs(t, err, context.Canceled)
}

// A watch on a stream of its own gets the progress asked for on that stream.
func TestWatchStreamProgress(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := prefix(t)
	own := WatchStream(ctx, t.Name())
	_, ch, err := testStore.WatchNow(own, p)
	require.NoError(t, err)
	// Another context of the same stream, as a read's is.
	awaitProgress(t, ch, func() error { return testStore.RequestProgress(WatchStream(context.Background(), t.Name())) })
}

// A guarded store touches only what it owns: every operation on another key or prefix is
// refused with ErrNotOwned before it reaches etcd.
func TestGuardedStoreRefusesWhatItDoesNotOwn(t *testing.T) {
	ctx := context.Background()
	mine := "/guard/mine/"
	theirs := "/guard/theirs/"
	_, err := testStore.Create(ctx, theirs+"x", []byte("theirs"))
	require.NoError(t, err)
	s := testStore.Guarded(func(key string) bool { return strings.HasPrefix(key, mine) })

	rev, err := s.Create(ctx, mine+"x", []byte("mine"))
	require.NoError(t, err)
	_, _, err = s.Get(ctx, mine+"x", 0)
	require.NoError(t, err)
	_, err = s.List(ctx, mine, 0, "", 0)
	require.NoError(t, err)

	_, _, err = s.Get(ctx, theirs+"x", 0)
	assert.ErrorIs(t, err, ErrNotOwned)
	_, err = s.Create(ctx, theirs+"y", []byte("y"))
	assert.ErrorIs(t, err, ErrNotOwned)
	_, err = s.Update(ctx, theirs+"x", []byte("y"), 0)
	assert.ErrorIs(t, err, ErrNotOwned)
	_, err = s.Delete(ctx, theirs+"x", 0)
	assert.ErrorIs(t, err, ErrNotOwned)
	_, err = s.List(ctx, theirs, 0, "", 0)
	assert.ErrorIs(t, err, ErrNotOwned)
	_, err = s.List(ctx, "/guard/", 0, "", 0)
	assert.ErrorIs(t, err, ErrNotOwned, "a prefix over another's keys")
	_, _, err = s.WatchNow(ctx, theirs)
	assert.ErrorIs(t, err, ErrNotOwned)
	ev := <-s.Watch(ctx, theirs, rev)
	assert.ErrorIs(t, ev.Err, ErrNotOwned)

	kv, _, err := testStore.Get(ctx, theirs+"x", 0)
	require.NoError(t, err)
	assert.Equal(t, "theirs", string(kv.Value), "nothing was changed")
}
