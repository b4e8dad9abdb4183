package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"testing"
	"time"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/lifecycle"
	"github.com/apichain/apichain/pkg/routing"
	"github.com/stretchr/testify/require"
)

// fakeBackend serves watches from a log of events, as a backend does: a watch from version v
// gets the logged events after v, then each event appended while it lasts.
type fakeBackend struct {
	mu       sync.Mutex
	events   []*resourcev1.WatchResponse
	wake     chan struct{} // closed and replaced at each append
	opens    []*resourcev1.WatchRequest
	live     int // watches open
	refuse   error
	warnings []string // sent with every watch it opens
}

func newFakeBackend() *fakeBackend { return &fakeBackend{wake: make(chan struct{})} }

// add appends an event at revision rev (0: an ERROR).
func (b *fakeBackend) add(typ string, rev int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.events = append(b.events, &resourcev1.WatchResponse{Type: typ, Revision: rev,
		Object: &resourcev1.Body{ContentType: "application/json", Data: []byte(`{"rv":"` + strconv.FormatInt(rev, 10) + `"}`)}})
	close(b.wake)
	b.wake = make(chan struct{})
}

func (b *fakeBackend) openCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.opens)
}

func (b *fakeBackend) liveCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.live
}

func (b *fakeBackend) open(ctx context.Context, _ string, req *resourcev1.WatchRequest) (watchStream, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.opens = append(b.opens, req)
	if b.refuse != nil {
		return nil, b.refuse
	}
	from, _ := strconv.ParseInt(req.GetOptions().GetResourceVersion(), 10, 64)
	b.live++
	return &fakeStream{b: b, ctx: ctx, from: from, first: &resourcev1.WatchResponse{Object: &resourcev1.Body{ContentType: "application/json"}},
		warnings: b.warnings}, nil
}

type fakeStream struct {
	b        *fakeBackend
	warnings []string
	ctx      context.Context
	from     int64
	next     int // index into b.events
	first    *resourcev1.WatchResponse
	ended    bool
}

func (s *fakeStream) Warnings() []string { return s.warnings }

func (s *fakeStream) Recv() (*resourcev1.WatchResponse, error) {
	if f := s.first; f != nil {
		s.first = nil
		return f, nil
	}
	for {
		s.b.mu.Lock()
		for s.next < len(s.b.events) {
			ev := s.b.events[s.next]
			s.next++
			if ev.GetRevision() == 0 || ev.GetRevision() > s.from {
				s.b.mu.Unlock()
				if ev.GetType() == "END" {
					s.end()
					return nil, io.EOF
				}
				return ev, nil
			}
		}
		wake := s.b.wake
		s.b.mu.Unlock()
		select {
		case <-wake:
		case <-s.ctx.Done():
			s.end()
			return nil, s.ctx.Err()
		}
	}
}

func (s *fakeStream) end() {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	if !s.ended {
		s.ended = true
		s.b.live--
	}
}

func mustWatch(t *testing.T, h *WatchHub, ctx context.Context, req *resourcev1.WatchRequest) watchStream {
	t.Helper()
	s, err := h.Watch(ctx, "v1", req)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// wantOpens checks how many watches the backend saw; why says what is expected.
func wantOpens(t *testing.T, b *fakeBackend, n int, why string) {
	t.Helper()
	if got := b.openCount(); got != n {
		t.Fatalf("the backend saw %d watches, want %s", got, why)
	}
}

// newTestHub is a hub whose backend is a fakeBackend, routed by a router with no instances
// (so nothing is proxied).
func newTestHub() (*WatchHub, *fakeBackend) {
	h, b := NewWatchHub(routing.NewRouter(lifecycle.NewRegistry(time.Minute), nil)), newFakeBackend()
	h.open = b.open
	return h, b
}

func watchReq(rv string) *resourcev1.WatchRequest {
	return &resourcev1.WatchRequest{Ref: &resourcev1.ResourceRef{Version: "v1", Resource: "configmaps", Namespace: "ns"},
		Encoding: &resourcev1.Encoding{Accept: "application/json"}, Options: &resourcev1.ListOptions{ResourceVersion: rv}}
}

// recvRevisions reads the established message, then n events, and returns their revisions.
func recvRevisions(t *testing.T, s watchStream, n int) []int64 {
	t.Helper()
	first, err := s.Recv()
	if err != nil || first.GetType() != "" || first.GetObject().GetContentType() != "application/json" {
		t.Fatalf("first message = %v, %v; want the established message", first, err)
	}
	return recvMore(t, s, n)
}

func recvMore(t *testing.T, s watchStream, n int) []int64 {
	t.Helper()
	var revs []int64
	for range n {
		ev, err := s.Recv()
		if err != nil {
			t.Fatalf("after %v: %v", revs, err)
		}
		revs = append(revs, ev.GetRevision())
	}
	return revs
}

// addAndRead adds events from..to and reads them from s (after its established message), a
// few at a time so that s never falls behind by a client's buffer.
func addAndRead(t *testing.T, b *fakeBackend, s watchStream, from, to int64) {
	t.Helper()
	recvRevisions(t, s, 0)
	for lo := from; lo <= to; lo += 50 {
		hi := min(lo+49, to)
		for rev := lo; rev <= hi; rev++ {
			b.add("ADDED", rev)
		}
		if got := recvMore(t, s, int(hi-lo+1)); fmt.Sprint(got) != fmt.Sprint(span(lo, hi)) {
			t.Fatalf("got %v, want %d..%d", got, lo, hi)
		}
	}
}

func span(from, to int64) []int64 {
	var out []int64
	for r := from; r <= to; r++ {
		out = append(out, r)
	}
	return out
}

func TestWatchHubSharesOneBackendWatch(t *testing.T) {
	h, b := newTestHub()
	ctx := t.Context() // cancelled as the test ends
	for rev := int64(1); rev <= 10; rev++ {
		b.add("ADDED", rev)
	}
	// Ten clients from version 10 at once, then one from 12 after two more events: one watch.
	var streams []watchStream
	var wg sync.WaitGroup
	var mu sync.Mutex
	for range 10 {
		wg.Go(func() {
			s, err := h.Watch(ctx, "v1", watchReq("10"))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			streams = append(streams, s)
			mu.Unlock()
		})
	}
	wg.Wait()
	b.add("MODIFIED", 11)
	b.add("MODIFIED", 12)
	for _, s := range streams {
		if got := recvRevisions(t, s, 2); fmt.Sprint(got) != fmt.Sprint(span(11, 12)) {
			t.Fatalf("got %v, want 11 and 12", got)
		}
	}
	late := mustWatch(t, h, ctx, watchReq("11"))
	b.add("DELETED", 13)
	if got := recvRevisions(t, late, 2); fmt.Sprint(got) != fmt.Sprint(span(12, 13)) {
		t.Fatalf("a client from 11 got %v, want 12 and 13 (12 from the history)", got)
	}
	for _, s := range streams {
		if got := recvMore(t, s, 1); got[0] != 13 {
			t.Fatalf("got %v, want 13", got)
		}
	}
	wantOpens(t, b, 1, "1")
	if up := b.opens[0]; up.GetOptions().GetResourceVersion() != "10" || up.GetTimeoutSeconds() != 0 {
		t.Fatalf("backend watch %v, want from 10 without a timeout", up)
	}
}

func TestWatchHubOwnWatchWhenNotShareable(t *testing.T) {
	h, b := newTestHub()
	ctx := t.Context()
	table := watchReq("5")
	table.Encoding.Accept = "application/json;as=Table;v=v1;g=meta.k8s.io"
	initial := watchReq("5")
	initial.SendInitialEvents = true
	status := watchReq("5")
	status.Ref.Subresource = "status"
	for _, req := range []*resourcev1.WatchRequest{watchReq(""), watchReq("0"), watchReq("x"), table, initial, status, table, initial} {
		mustWatch(t, h, ctx, req)
	}
	wantOpens(t, b, 8, "one each (8)")
}

func TestWatchHubOlderClientGetsItsOwnWatch(t *testing.T) {
	h, b := newTestHub()
	ctx := t.Context()
	for rev := int64(1); rev <= 5; rev++ {
		b.add("ADDED", rev)
	}
	mustWatch(t, h, ctx, watchReq("4"))
	older := mustWatch(t, h, ctx, watchReq("2"))
	if got := recvRevisions(t, older, 3); fmt.Sprint(got) != fmt.Sprint(span(3, 5)) {
		t.Fatalf("a client from 2 got %v, want 3 to 5", got)
	}
	wantOpens(t, b, 2, "2")
}

func TestWatchHubHistoryIsBounded(t *testing.T) {
	h, b := newTestHub()
	ctx := t.Context()
	first := mustWatch(t, h, ctx, watchReq("1"))
	last := int64(1 + hubHistory + 10)
	addAndRead(t, b, first, 2, last)
	// The history now starts after 11: a client from 5 cannot join, one from 20 can.
	mustWatch(t, h, ctx, watchReq("5"))
	wantOpens(t, b, 2, "2 (the client from 5 needs its own)")
	joined := mustWatch(t, h, ctx, watchReq("20"))
	if got := recvRevisions(t, joined, int(last-20)); got[0] != 21 || got[len(got)-1] != last {
		t.Fatalf("a client from 20 got %d..%d, want 21..%d", got[0], got[len(got)-1], last)
	}
	wantOpens(t, b, 2, "2")
}

func TestWatchHubSlowClientEndsAlone(t *testing.T) {
	h, b := newTestHub()
	ctx := t.Context()
	slow := mustWatch(t, h, ctx, watchReq("1"))
	fast := mustWatch(t, h, ctx, watchReq("1"))
	last := int64(1 + hubClientBuffer + 50)
	addAndRead(t, b, fast, 2, last)
	// The slow client read nothing: it has its buffer's worth, then a clean end.
	revs := recvRevisions(t, slow, hubClientBuffer)
	if revs[0] != 2 || revs[len(revs)-1] != int64(1+hubClientBuffer) {
		t.Fatalf("the slow client got %d..%d", revs[0], revs[len(revs)-1])
	}
	if _, err := slow.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("the slow client's end: %v, want io.EOF", err)
	}
	b.add("ADDED", last+1)
	if revs := recvMore(t, fast, 1); revs[0] != last+1 {
		t.Fatalf("the fast client got %v after the slow one ended", revs)
	}
}

func TestWatchHubBackendWatchEndsWithItsLastClient(t *testing.T) {
	h, b := newTestHub()
	ctx1, cancel1 := context.WithCancel(context.Background())
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	mustWatch(t, h, ctx1, watchReq("1"))
	s2 := mustWatch(t, h, ctx2, watchReq("1"))
	cancel1()
	b.add("ADDED", 2)
	if got := recvRevisions(t, s2, 1); got[0] != 2 {
		t.Fatalf("the remaining client got %v", got)
	}
	if n := b.liveCount(); n != 1 {
		t.Fatalf("%d backend watches open, want 1 while a client remains", n)
	}
	cancel2()
	require.Eventually(t, func() bool { return b.liveCount() == 0 }, 10*time.Second, time.Millisecond, "the backend watch ends")
	if _, err := s2.Recv(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Recv after the client went: %v, want context.Canceled", err)
	}
	// The next client starts a new backend watch.
	ctx3, cancel3 := context.WithCancel(context.Background())
	defer cancel3()
	s3 := mustWatch(t, h, ctx3, watchReq("2"))
	b.add("ADDED", 3)
	if got := recvRevisions(t, s3, 1); got[0] != 3 || b.openCount() != 2 {
		t.Fatalf("got %v with %d backend watches, want 3 and 2", got, b.openCount())
	}
}

func TestWatchHubBackendEndEndsClients(t *testing.T) {
	h, b := newTestHub()
	ctx := t.Context()
	var clients []watchStream
	for range 3 {
		clients = append(clients, mustWatch(t, h, ctx, watchReq("1")))
	}
	b.add("ERROR", 0)
	b.add("END", 9)
	for _, s := range clients {
		ev, err := s.Recv()
		if err == nil {
			ev, err = s.Recv()
		}
		if err != nil || ev.GetType() != "ERROR" {
			t.Fatalf("got %v, %v; want the ERROR event", ev, err)
		}
		if _, err := s.Recv(); !errors.Is(err, io.EOF) {
			t.Fatalf("after the backend ended: %v, want io.EOF", err)
		}
	}
	require.Eventually(t, func() bool { return b.liveCount() == 0 }, 10*time.Second, time.Millisecond, "the backend watch ends")
}

func TestWatchHubRefusedWatch(t *testing.T) {
	h, b := newTestHub()
	b.refuse = errors.New("gone")
	if _, err := h.Watch(context.Background(), "v1", watchReq("1")); err == nil || err.Error() != "gone" {
		t.Fatalf("got %v, want the backend's error", err)
	}
	b.mu.Lock()
	b.refuse = nil
	b.mu.Unlock()
	ctx := t.Context()
	mustWatch(t, h, ctx, watchReq("1")) // after a refusal, the next client opens again
}

func TestWatchHubClientTimeout(t *testing.T) {
	h, b := newTestHub()
	ctx := t.Context()
	long := mustWatch(t, h, ctx, watchReq("1"))
	req := watchReq("1")
	req.TimeoutSeconds = 1
	short := mustWatch(t, h, ctx, req)
	recvRevisions(t, short, 0)
	if _, err := short.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("after its timeout: %v, want io.EOF", err)
	}
	b.add("ADDED", 2)
	if got := recvRevisions(t, long, 1); got[0] != 2 {
		t.Fatalf("the other client got %v", got)
	}
}

func TestWatchHubUntaggedBackend(t *testing.T) {
	h, b := newTestHub()
	ctx := t.Context()
	first := mustWatch(t, h, ctx, watchReq("1"))
	b.add("ADDED", 0) // a backend that does not tag its events
	recvRevisions(t, first, 1)
	mustWatch(t, h, ctx, watchReq("1"))
	mustWatch(t, h, ctx, watchReq("3"))
	wantOpens(t, b, 2, "2: a client from the start joins, a later one cannot")
}

// A watch the backend ends at once (a version etcd compacted: an ERROR with a 410, then the
// end) reaches its client, which opened it, rather than being opened again and again.
func TestWatchHubImmediateEnd(t *testing.T) {
	h, b := newTestHub()
	ctx := t.Context()
	b.add("ERROR", 0)
	b.add("END", 9)
	for i := range 20 {
		s := mustWatch(t, h, ctx, watchReq("1"))
		if _, err := s.Recv(); err != nil {
			t.Fatal(err)
		}
		ev, err := s.Recv()
		if err != nil || ev.GetType() != "ERROR" {
			t.Fatalf("got %v, %v; want the ERROR event", ev, err)
		}
		if _, err := s.Recv(); !errors.Is(err, io.EOF) {
			t.Fatalf("after the ERROR: %v, want io.EOF", err)
		}
		wantOpens(t, b, i+1, "one per client")
	}
}

// A deprecated kind's warning, sent by the backend as its watch opened, reaches every client
// of a shared watch, as it does one with a watch of its own.
func TestWatchHubWarnings(t *testing.T) {
	h, b := newTestHub()
	b.warnings = []string{"v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"}
	ctx := t.Context()
	first, second, own := mustWatch(t, h, ctx, watchReq("5")), mustWatch(t, h, ctx, watchReq("5")), mustWatch(t, h, ctx, watchReq(""))
	wantOpens(t, b, 2, "two share a watch, one has its own")
	for _, s := range []watchStream{first, second, own} {
		if got := s.Warnings(); len(got) != 1 || got[0] != b.warnings[0] {
			t.Errorf("warnings %q, want %q", got, b.warnings)
		}
	}
}
