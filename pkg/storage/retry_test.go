package storage

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/namespace"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A fault stands in for etcd's answer to one call: it may commit the call (commit) and
// then lose the answer, or fail it before etcd sees it, as a leader change or a broken
// connection does.
type fault func(ctx context.Context, commit func() error) error

var (
	// lostAnswer commits, then reports the timeout etcd gives when its leader failed.
	lostAnswer fault = func(_ context.Context, commit func() error) error {
		if err := commit(); err != nil {
			return err
		}
		return rpctypes.ErrTimeoutDueToLeaderFail
	}
	// timedOut reports the same timeout without committing: etcd's answers cannot tell them apart.
	timedOut fault = func(context.Context, func() error) error { return rpctypes.ErrTimeoutDueToLeaderFail }
	// noLeader is refused before etcd proposes anything.
	noLeader fault = func(context.Context, func() error) error { return rpctypes.ErrNoLeader }
	// reset is a broken connection.
	reset fault = func(context.Context, func() error) error {
		return status.Error(codes.Unavailable, "read: connection reset by peer")
	}
	// hang waits for a connection that never comes, as etcd's client does, until the try's
	// context ends.
	hang fault = func(ctx context.Context, _ func() error) error { <-ctx.Done(); return ctx.Err() }
)

// then runs another client's step before f.
func (f fault) then(step func()) fault {
	return func(ctx context.Context, commit func() error) error { step(); return f(ctx, commit) }
}

// faultyKV is the test etcd's KV with faults on its next calls (transactions and reads, in
// order); calls without a fault go through.
type faultyKV struct {
	clientv3.KV
	mu     sync.Mutex
	faults []fault
	calls  int
}

func faulty(faults ...fault) (*Store, *faultyKV) {
	f := &faultyKV{KV: testClient.KV, faults: faults}
	s := NewStore(testClient, DefaultPrefix)
	s.kv = namespace.NewKV(f, s.prefix)
	return s, f
}

func (f *faultyKV) next() fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if len(f.faults) == 0 {
		return nil
	}
	next := f.faults[0]
	f.faults = f.faults[1:]
	return next
}

// Do serves the reads of the store's prefixed KV (etcd's namespace package reads through Do).
func (f *faultyKV) Do(ctx context.Context, op clientv3.Op) (clientv3.OpResponse, error) {
	if fl := f.next(); fl != nil {
		var resp clientv3.OpResponse
		err := fl(ctx, func() (err error) { resp, err = f.KV.Do(ctx, op); return err })
		return resp, err
	}
	return f.KV.Do(ctx, op)
}

func (f *faultyKV) Txn(ctx context.Context) clientv3.Txn {
	return &faultyTxn{Txn: f.KV.Txn(ctx), f: f, ctx: ctx}
}

type faultyTxn struct {
	clientv3.Txn
	f   *faultyKV
	ctx context.Context
}

func (t *faultyTxn) If(cs ...clientv3.Cmp) clientv3.Txn   { t.Txn = t.Txn.If(cs...); return t }
func (t *faultyTxn) Then(ops ...clientv3.Op) clientv3.Txn { t.Txn = t.Txn.Then(ops...); return t }
func (t *faultyTxn) Else(ops ...clientv3.Op) clientv3.Txn { t.Txn = t.Txn.Else(ops...); return t }

func (t *faultyTxn) Commit() (*clientv3.TxnResponse, error) {
	if fl := t.f.next(); fl != nil {
		var resp *clientv3.TxnResponse
		err := fl(t.ctx, func() (err error) { resp, err = t.Txn.Commit(); return err })
		return resp, err
	}
	return t.Txn.Commit()
}

func value(t *testing.T, key string) *KV {
	t.Helper()
	kv, _, err := testStore.Get(context.Background(), key, 0)
	require.NoError(t, err)
	return kv
}

func TestCreateRidesThroughUnavailability(t *testing.T) {
	ctx := context.Background()
	t.Run("the answer lost: the retry finds its own object", func(t *testing.T) {
		k := prefix(t) + "a"
		s, f := faulty(lostAnswer)
		rev, err := s.Create(ctx, k, []byte("mine"))
		require.NoError(t, err)
		assert.Equal(t, rev, value(t, k).ModRevision)
		assert.Equal(t, 2, f.calls, "one retry")
	})
	t.Run("the answer lost, and the object changed before the retry", func(t *testing.T) {
		k := prefix(t) + "a"
		s, _ := faulty(lostAnswer, reset.then(func() {
			kv := value(t, k)
			_, err := testStore.Update(ctx, k, []byte("changed"), kv.ModRevision)
			require.NoError(t, err)
		}))
		rev, err := s.Create(ctx, k, []byte("mine"))
		require.NoError(t, err)
		first, _, err := testStore.Get(ctx, k, rev)
		require.NoError(t, err)
		assert.Equal(t, []byte("mine"), first.Value, "the revision is the create's")
		assert.Equal(t, []byte("changed"), value(t, k).Value)
	})
	t.Run("not written, and another client created it meanwhile", func(t *testing.T) {
		k := prefix(t) + "a"
		s, _ := faulty(timedOut.then(func() {
			_, err := testStore.Create(ctx, k, []byte("theirs"))
			require.NoError(t, err)
		}))
		_, err := s.Create(ctx, k, []byte("mine"))
		assert.ErrorIs(t, err, ErrAlreadyExists)
	})
	t.Run("refused before proposing, then written", func(t *testing.T) {
		k := prefix(t) + "a"
		s, f := faulty(noLeader, reset, noLeader)
		_, err := s.Create(ctx, k, []byte("mine"))
		require.NoError(t, err)
		assert.Equal(t, []byte("mine"), value(t, k).Value)
		assert.Equal(t, 4, f.calls)
	})
	t.Run("an existing object without a lost answer is AlreadyExists at once", func(t *testing.T) {
		k := prefix(t) + "a"
		_, err := testStore.Create(ctx, k, []byte("mine"))
		require.NoError(t, err)
		_, err = testStore.Create(ctx, k, []byte("mine"))
		assert.ErrorIs(t, err, ErrAlreadyExists, "the same bytes are not taken for a retry of this request")
	})
}

func TestUpdateRidesThroughUnavailability(t *testing.T) {
	ctx := context.Background()
	create := func(t *testing.T) (string, int64) {
		k := prefix(t) + "a"
		rev, err := testStore.Create(ctx, k, []byte("v1"))
		require.NoError(t, err)
		return k, rev
	}
	t.Run("the answer lost", func(t *testing.T) {
		k, rev := create(t)
		s, _ := faulty(lostAnswer)
		got, err := s.Update(ctx, k, []byte("v2"), rev)
		require.NoError(t, err)
		assert.Equal(t, value(t, k).ModRevision, got)
	})
	t.Run("the answer lost, and another client wrote after it", func(t *testing.T) {
		k, rev := create(t)
		var theirs int64
		s, _ := faulty(lostAnswer, timedOut.then(func() {
			var err error
			theirs, err = testStore.Update(ctx, k, []byte("v3"), value(t, k).ModRevision)
			require.NoError(t, err)
		}))
		got, err := s.Update(ctx, k, []byte("v2"), rev)
		require.NoError(t, err, "the write happened: its answer is success")
		assert.Less(t, got, theirs)
		mine, _, err := testStore.Get(ctx, k, got)
		require.NoError(t, err)
		assert.Equal(t, []byte("v2"), mine.Value)
	})
	t.Run("not written, and another client wrote meanwhile", func(t *testing.T) {
		k, rev := create(t)
		s, _ := faulty(timedOut.then(func() {
			_, err := testStore.Update(ctx, k, []byte("v3"), rev)
			require.NoError(t, err)
		}))
		_, err := s.Update(ctx, k, []byte("v2"), rev)
		assert.ErrorIs(t, err, ErrConflict)
		assert.Equal(t, []byte("v3"), value(t, k).Value)
	})
	t.Run("not written, and another client deleted it meanwhile", func(t *testing.T) {
		k, rev := create(t)
		s, _ := faulty(timedOut.then(func() {
			_, err := testStore.Delete(ctx, k, rev)
			require.NoError(t, err)
		}))
		_, err := s.Update(ctx, k, []byte("v2"), rev)
		assert.ErrorIs(t, err, ErrNotFound)
	})
}

func TestDeleteRidesThroughUnavailability(t *testing.T) {
	ctx := context.Background()
	t.Run("the answer lost, and the name created again before the retry", func(t *testing.T) {
		k := prefix(t) + "a"
		rev, err := testStore.Create(ctx, k, []byte("v1"))
		require.NoError(t, err)
		s, _ := faulty(lostAnswer, reset.then(func() {
			_, err := testStore.Create(ctx, k, []byte("again"))
			require.NoError(t, err)
		}))
		got, err := s.Delete(ctx, k, rev)
		require.NoError(t, err)
		_, _, err = testStore.Get(ctx, k, got)
		assert.ErrorIs(t, err, ErrNotFound, "the revision is the delete's")
	})
	t.Run("not written, and changed meanwhile", func(t *testing.T) {
		k := prefix(t) + "a"
		rev, err := testStore.Create(ctx, k, []byte("v1"))
		require.NoError(t, err)
		s, _ := faulty(timedOut.then(func() {
			_, err := testStore.Update(ctx, k, []byte("v2"), rev)
			require.NoError(t, err)
		}))
		_, err = s.Delete(ctx, k, rev)
		assert.ErrorIs(t, err, ErrConflict)
	})
	t.Run("unconditional, the answer lost", func(t *testing.T) {
		k := prefix(t) + "a"
		_, err := testStore.Create(ctx, k, []byte("v1"))
		require.NoError(t, err)
		s, _ := faulty(lostAnswer)
		_, err = s.Delete(ctx, k, 0)
		require.NoError(t, err)
	})
}

func TestUnavailableOutlastsTheRequest(t *testing.T) {
	forever := func(f fault) []fault {
		out := make([]fault, 100)
		for i := range out {
			out[i] = f
		}
		return out
	}
	k := prefix(t) + "a"
	for _, c := range []struct {
		name   string
		faults []fault
		want   error
		tries  int // at least
	}{
		{"refused every time: nothing was written", forever(noLeader), ErrUnavailable, 3},
		{"timed out every time: a write may have happened", forever(timedOut), ErrOutcomeUnknown, 3},
		{"refused, then timed out", append([]fault{timedOut}, forever(noLeader)...), ErrOutcomeUnknown, 3},
		// The try ends when the retries do, a second before the request's deadline.
		{"a try that hangs", forever(hang), ErrOutcomeUnknown, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
			defer cancel()
			s, f := faulty(c.faults...)
			_, err := s.Create(ctx, k, []byte("v"))
			assert.ErrorIs(t, err, c.want)
			assert.NoError(t, ctx.Err(), "answered before the request's deadline")
			assert.GreaterOrEqual(t, f.calls, c.tries)
		})
	}
	t.Run("reads", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		s, _ := faulty(forever(reset)...)
		_, _, err := s.Get(ctx, k, 0)
		assert.ErrorIs(t, err, ErrUnavailable)
		_, err = s.List(ctx, k, 0, "", 0)
		assert.ErrorIs(t, err, ErrUnavailable)
	})
}

func TestReadsRetry(t *testing.T) {
	ctx := context.Background()
	k := prefix(t) + "a"
	_, err := testStore.Create(ctx, k, []byte("v1"))
	require.NoError(t, err)
	s, f := faulty(reset, noLeader)
	kv, _, err := s.Get(ctx, k, 0)
	require.NoError(t, err)
	assert.Equal(t, []byte("v1"), kv.Value)
	assert.Equal(t, 3, f.calls)
	s, _ = faulty(timedOut)
	page, err := s.List(ctx, prefix(t), 0, "", 0)
	require.NoError(t, err)
	assert.Empty(t, page.KVs)
}

func TestTransient(t *testing.T) {
	ctx := context.Background()
	for _, err := range []error{rpctypes.ErrNoLeader, rpctypes.ErrTimeout, rpctypes.ErrLeaderChanged, rpctypes.ErrTooManyRequests,
		status.Error(codes.Unavailable, "connection reset"), fmt.Errorf("a try's own timeout: %w", context.DeadlineExceeded)} {
		assert.True(t, transient(ctx, err), "%v", err)
	}
	for _, err := range []error{rpctypes.ErrRequestTooLarge, rpctypes.ErrCompacted, status.Error(codes.InvalidArgument, "x"), errors.New("plain")} {
		assert.False(t, transient(ctx, err), "%v", err)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	assert.False(t, transient(done, rpctypes.ErrNoLeader), "the caller has gone")
}
