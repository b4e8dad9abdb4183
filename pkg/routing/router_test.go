package routing

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"

	lifecyclev1 "github.com/apichain/apichain/gen/apichain/lifecycle/v1"
	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/lifecycle"
	"github.com/apichain/apichain/pkg/rpcstatus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// instance is a backend instance's lifecycle state for the registry. Its address is
// "<service>-<id>:9090"; the tests' fake calls never dial it.
type instance struct {
	svc, id      string
	notReady     bool
	shuttingDown bool
	served       []string
	muxComplete  bool
}

func (i instance) state() *lifecyclev1.InstanceState {
	st := &lifecyclev1.InstanceState{Service: i.svc, InstanceId: i.id, Address: i.svc + "-" + i.id + ":9090",
		Ready: !i.notReady, State: stateOf(i.shuttingDown), Served: i.served}
	if i.muxComplete {
		st.Signals = append(st.Signals, &lifecyclev1.Signal{Name: "MuxAndDiscoveryComplete", At: timestamppb.Now()})
	}
	return st
}

func addr(svc, id string) string { return svc + "-" + id + ":9090" }

// newTestPool is a Pool without TLS, for fake and in-process plaintext backends.
func newTestPool(t *testing.T) *Pool {
	p := NewPool(insecure.NewCredentials())
	t.Cleanup(p.CloseAll)
	return p
}

func newTestRouter(t *testing.T, states ...*lifecyclev1.InstanceState) *Router {
	t.Helper()
	reg := lifecycle.NewRegistry(time.Hour)
	for _, st := range states {
		reg.Upsert(st, lifecycle.SourceNATS)
	}
	return NewRouter(reg, newTestPool(t))
}

func states(insts ...instance) []*lifecyclev1.InstanceState {
	out := make([]*lifecyclev1.InstanceState, 0, len(insts))
	for _, i := range insts {
		out = append(out, i.state())
	}
	return out
}

func services(ts []Target) []string {
	out := make([]string, 0, len(ts))
	for _, t := range ts {
		out = append(out, t.Service)
	}
	return out
}

func addrs(ts []Target) []string {
	out := make([]string, 0, len(ts))
	for _, t := range ts {
		out = append(out, t.Addr)
	}
	return out
}

func TestRouterPlan(t *testing.T) {
	tests := []struct {
		name  string
		insts []instance
		gv    string
		// wantServices is the plan's services in order; wantAddrs its addresses in any order.
		wantServices []string
		wantAddrs    []string
	}{
		{
			name: "route table: only the service serving the group/version, all its routable instances",
			insts: []instance{
				{svc: "aggregator", id: "a", served: []string{"apiregistration.k8s.io/v1"}},
				{svc: "core", id: "a", served: []string{"v1", "apps/v1"}},
				{svc: "core", id: "b", served: []string{"v1", "apps/v1"}},
				{svc: "extensions", id: "a", served: []string{"apiextensions.k8s.io/v1"}},
			},
			gv:           "apps/v1",
			wantServices: []string{"core", "core"},
			wantAddrs:    []string{addr("core", "a"), addr("core", "b")},
		},
		{
			name: "route table: first serving service in chain order wins",
			insts: []instance{
				{svc: "extensions", id: "a", served: []string{"example.com/v1"}},
				{svc: "core", id: "a", served: []string{"example.com/v1"}},
				{svc: "aggregator", id: "a"},
			},
			gv:           "example.com/v1",
			wantServices: []string{"core"},
			wantAddrs:    []string{addr("core", "a")},
		},
		{
			name: "route table: aggregator first in chain order",
			insts: []instance{
				{svc: "aggregator", id: "a", served: []string{"v1"}},
				{svc: "core", id: "a", served: []string{"v1"}},
			},
			gv:           "v1",
			wantServices: []string{"aggregator"},
			wantAddrs:    []string{addr("aggregator", "a")},
		},
		{
			name: "route table: only instances that serve it, not every instance of the service",
			insts: []instance{
				{svc: "extensions", id: "a", served: []string{"stable.example.com/v1"}},
				{svc: "extensions", id: "b"}, // has not learned about the CRD yet
			},
			gv:           "stable.example.com/v1",
			wantServices: []string{"extensions"},
			wantAddrs:    []string{addr("extensions", "a")},
		},
		{
			name: "route table: not-ready and shutting-down instances are never chosen",
			insts: []instance{
				{svc: "core", id: "a", served: []string{"v1"}, notReady: true},
				{svc: "core", id: "b", served: []string{"v1"}, shuttingDown: true},
				{svc: "core", id: "c", served: []string{"v1"}},
			},
			gv:           "v1",
			wantServices: []string{"core"},
			wantAddrs:    []string{addr("core", "c")},
		},
		{
			name: "route table skips a service whose serving instances are not routable",
			insts: []instance{
				{svc: "core", id: "a", served: []string{"example.com/v1"}, shuttingDown: true},
				{svc: "extensions", id: "a", served: []string{"example.com/v1"}},
			},
			gv:           "example.com/v1",
			wantServices: []string{"extensions"},
			wantAddrs:    []string{addr("extensions", "a")},
		},
		{
			name: "miss: one routable instance of every service in chain order",
			insts: []instance{
				{svc: "extensions", id: "a"},
				{svc: "core", id: "a"},
				{svc: "aggregator", id: "a"},
			},
			gv:           "unknown.example.com/v1",
			wantServices: []string{"aggregator", "core", "extensions"},
			wantAddrs:    []string{addr("aggregator", "a"), addr("core", "a"), addr("extensions", "a")},
		},
		{
			name: "miss: services without a routable instance are left out",
			insts: []instance{
				{svc: "aggregator", id: "a", notReady: true},
				{svc: "core", id: "a"},
				{svc: "extensions", id: "a", shuttingDown: true},
				{svc: "extensions", id: "b", notReady: true},
			},
			gv:           "",
			wantServices: []string{"core"},
			wantAddrs:    []string{addr("core", "a")},
		},
		{
			name: "a serving instance that is not routable does not make a route",
			insts: []instance{
				{svc: "aggregator", id: "a"},
				{svc: "core", id: "a", served: []string{"v1"}, notReady: true},
				{svc: "core", id: "b"},
			},
			gv:           "v1",
			wantServices: []string{"aggregator", "core"},
			wantAddrs:    []string{addr("aggregator", "a"), addr("core", "b")},
		},
		{
			name: "services outside the chain are never chosen",
			insts: []instance{
				{svc: "gateway", id: "a", served: []string{"v1"}},
				{svc: "other", id: "a"},
			},
			gv: "v1",
		},
		{
			name: "nothing routable: empty plan",
			insts: []instance{
				{svc: "core", id: "a", served: []string{"v1"}, notReady: true},
			},
			gv: "v1",
		},
		{name: "empty registry: empty plan", gv: "v1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := newTestRouter(t, states(tt.insts...)...)
			plan := rt.plan(tt.gv)
			assert.Equal(t, tt.wantServices, nilIfEmpty(services(plan)))
			assert.ElementsMatch(t, tt.wantAddrs, addrs(plan))
		})
	}
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func TestRouterPlanRoundRobin(t *testing.T) {
	rt := newTestRouter(t, states(
		instance{svc: "core", id: "a", served: []string{"v1"}},
		instance{svc: "core", id: "b", served: []string{"v1"}},
		instance{svc: "core", id: "c", served: []string{"v1"}},
	)...)
	all := []string{addr("core", "a"), addr("core", "b"), addr("core", "c")}

	firsts := map[string]int{}
	for range 9 {
		plan := addrs(rt.plan("v1"))
		// Every plan lists every instance once, so retries can reach each replica...
		require.ElementsMatch(t, all, plan)
		// ...as a rotation of the same ring.
		i := indexOf(all, plan[0])
		for k := range plan {
			assert.Equal(t, all[(i+k)%len(all)], plan[k])
		}
		firsts[plan[0]]++
	}
	assert.Equal(t, map[string]int{all[0]: 3, all[1]: 3, all[2]: 3}, firsts, "first choice spreads evenly")
}

func TestRouterPlanRoundRobinOnMiss(t *testing.T) {
	rt := newTestRouter(t, states(
		instance{svc: "core", id: "a"},
		instance{svc: "core", id: "b"},
		instance{svc: "extensions", id: "a"},
	)...)
	firsts := map[string]int{}
	for range 4 {
		plan := rt.plan("nope/v1")
		require.Equal(t, []string{"core", "extensions"}, services(plan))
		firsts[plan[0].Addr]++
	}
	assert.Equal(t, map[string]int{addr("core", "a"): 2, addr("core", "b"): 2}, firsts)
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

func TestRouterAnyInstance(t *testing.T) {
	rt := newTestRouter(t, states(
		instance{svc: "core", id: "a", notReady: true},
		instance{svc: "core", id: "b"},
		instance{svc: "extensions", id: "a", shuttingDown: true},
	)...)
	got, ok := rt.AnyInstance("core")
	require.True(t, ok)
	assert.Equal(t, Target{Service: "core", Instance: "b", Addr: addr("core", "b")}, got)

	_, ok = rt.AnyInstance("extensions")
	assert.False(t, ok, "shutting down")
	_, ok = rt.AnyInstance("aggregator")
	assert.False(t, ok, "none")
}

func TestRouterComplete(t *testing.T) {
	all := []instance{
		{svc: "aggregator", id: "a", muxComplete: true},
		{svc: "core", id: "a", muxComplete: true},
		{svc: "extensions", id: "a", muxComplete: true},
	}
	tests := []struct {
		name  string
		insts []instance
		want  bool
	}{
		{"every service signalled", all, true},
		{"empty registry", nil, false},
		{"one service missing", all[:2], false},
		{"one service without the signal", []instance{all[0], all[1], {svc: "extensions", id: "a"}}, false},
		{"one instance of a service is enough", []instance{all[0], all[1], {svc: "extensions", id: "a"}, {svc: "extensions", id: "b", muxComplete: true}}, true},
		{"the gateway's own signal does not count", []instance{all[0], all[1], {svc: "gateway", id: "a", muxComplete: true}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, newTestRouter(t, states(tt.insts...)...).Complete())
		})
	}

	t.Run("other signals do not count", func(t *testing.T) {
		st := instance{svc: "core", id: "a"}.state()
		st.Signals = []*lifecyclev1.Signal{{Name: "HasBeenReady"}}
		rt := newTestRouter(t, all[0].state(), st, all[2].state())
		assert.False(t, rt.Complete())
	})
}

// fakeChain answers invoke's calls from a script, by address or else by call number, and
// records the addresses called.
type fakeChain struct {
	mu     sync.Mutex
	answer map[string]error // by address; nil: success
	seq    []error          // by call number, for addresses not in answer
	calls  []string
}

func (f *fakeChain) call(_ context.Context, conn grpc.ClientConnInterface) (string, error) {
	a := conn.(*Conn).Target()
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(f.calls)
	f.calls = append(f.calls, a)
	if err, ok := f.answer[a]; ok {
		if err != nil {
			return "", err
		}
	} else if n < len(f.seq) && f.seq[n] != nil {
		return "", f.seq[n]
	}
	return "from " + a, nil
}

var (
	errUnavailable = status.Error(codes.Unavailable, "connection refused")
	errNotServed   = rpcstatus.NotServed("test")
	errKubeNotFnd  = rpcstatus.FromKube(rpcstatus.NewStatus(http.StatusNotFound, metav1.StatusReasonNotFound, `pods "x" not found`))
)

func completeChain(extra ...instance) []instance {
	return append([]instance{
		{svc: "aggregator", id: "a", muxComplete: true},
		{svc: "core", id: "a", muxComplete: true},
		{svc: "extensions", id: "a", muxComplete: true},
	}, extra...)
}

func TestInvoke(t *testing.T) {
	tests := []struct {
		name      string
		insts     []instance
		gv        string
		answer    map[string]error
		want      string
		wantErr   error // compared with errors.Is, or by status when it is a gRPC error
		wantCalls []string
		// anyOrderCalls: the calls' order depends on the round-robin position.
		anyOrderCalls bool
		// wantCallCount, when set, checks only the number of calls.
		wantCallCount int
	}{
		{
			name:      "first delegate in chain order that serves it answers",
			insts:     completeChain(),
			gv:        "nope/v1",
			answer:    map[string]error{addr("aggregator", "a"): errNotServed},
			want:      "from " + addr("core", "a"),
			wantCalls: []string{addr("aggregator", "a"), addr("core", "a")},
		},
		{
			name:  "NOT_SERVED moves along the whole chain",
			insts: completeChain(),
			gv:    "nope/v1",
			answer: map[string]error{
				addr("aggregator", "a"): errNotServed,
				addr("core", "a"):       errNotServed,
			},
			want:      "from " + addr("extensions", "a"),
			wantCalls: []string{addr("aggregator", "a"), addr("core", "a"), addr("extensions", "a")},
		},
		{
			name:  "NOT_SERVED everywhere in a complete chain: end of chain",
			insts: completeChain(),
			gv:    "nope/v1",
			answer: map[string]error{
				addr("aggregator", "a"): errNotServed,
				addr("core", "a"):       errNotServed,
				addr("extensions", "a"): errNotServed,
			},
			wantErr:   ErrEndOfChain,
			wantCalls: []string{addr("aggregator", "a"), addr("core", "a"), addr("extensions", "a")},
		},
		{
			name:  "NOT_SERVED everywhere in an incomplete chain: chain incomplete",
			insts: []instance{{svc: "aggregator", id: "a", muxComplete: true}, {svc: "core", id: "a", muxComplete: true}, {svc: "extensions", id: "a"}},
			gv:    "nope/v1",
			answer: map[string]error{
				addr("aggregator", "a"): errNotServed,
				addr("core", "a"):       errNotServed,
				addr("extensions", "a"): errNotServed,
			},
			wantErr:   ErrChainIncomplete,
			wantCalls: []string{addr("aggregator", "a"), addr("core", "a"), addr("extensions", "a")},
		},
		{
			name:    "no routable instance and an incomplete chain",
			insts:   []instance{{svc: "core", id: "a", notReady: true}},
			gv:      "v1",
			wantErr: ErrChainIncomplete,
		},
		{
			name:    "no routable instance in a complete chain",
			insts:   []instance{{svc: "aggregator", id: "a", muxComplete: true, notReady: true}, {svc: "core", id: "a", muxComplete: true, shuttingDown: true}, {svc: "extensions", id: "a", muxComplete: true, notReady: true}},
			gv:      "v1",
			wantErr: ErrEndOfChain,
		},
		{
			name: "NOT_SERVED from a routed service skips its other instances",
			insts: completeChain(
				instance{svc: "core", id: "b", served: []string{"v1"}},
				instance{svc: "core", id: "c", served: []string{"v1"}},
			),
			gv: "v1",
			answer: map[string]error{
				addr("core", "b"): errNotServed,
				addr("core", "c"): errNotServed,
			},
			wantErr:       ErrEndOfChain,
			wantCallCount: 1,
		},
		{
			name: "other errors are returned at once",
			insts: completeChain(
				instance{svc: "core", id: "b", served: []string{"v1"}},
				instance{svc: "core", id: "c", served: []string{"v1"}},
			),
			gv: "v1",
			answer: map[string]error{
				addr("core", "b"): errKubeNotFnd,
				addr("core", "c"): errKubeNotFnd,
			},
			wantErr:       errKubeNotFnd,
			wantCallCount: 1,
		},
		{
			name:  "an error other than NOT_SERVED stops the chain",
			insts: completeChain(),
			gv:    "nope/v1",
			answer: map[string]error{
				addr("aggregator", "a"): status.Error(codes.PermissionDenied, "no"),
			},
			wantErr:   status.Error(codes.PermissionDenied, "no"),
			wantCalls: []string{addr("aggregator", "a")},
		},
		{
			name:  "Unavailable on a miss moves on to the next service",
			insts: completeChain(),
			gv:    "nope/v1",
			answer: map[string]error{
				addr("aggregator", "a"): errUnavailable,
			},
			want:      "from " + addr("core", "a"),
			wantCalls: []string{addr("aggregator", "a"), addr("core", "a")},
		},
		{
			// A dead replica must not turn into "not found": clients take a 404 for an
			// object's absence. The request could not be answered, so it is Unavailable (503).
			name: "every instance Unavailable: the Unavailable error, not end of chain",
			insts: completeChain(
				instance{svc: "core", id: "b", served: []string{"v1"}},
				instance{svc: "core", id: "c", served: []string{"v1"}},
			),
			gv: "v1",
			answer: map[string]error{
				addr("core", "b"): errUnavailable,
				addr("core", "c"): errUnavailable,
			},
			wantErr:       errUnavailable,
			wantCalls:     []string{addr("core", "b"), addr("core", "c")},
			anyOrderCalls: true,
		},
		{
			name:  "Unavailable then NOT_SERVED down the chain: still Unavailable",
			insts: completeChain(),
			gv:    "nope/v1",
			answer: map[string]error{
				addr("aggregator", "a"): errUnavailable,
				addr("core", "a"):       errNotServed,
				addr("extensions", "a"): errNotServed,
			},
			wantErr:   errUnavailable,
			wantCalls: []string{addr("aggregator", "a"), addr("core", "a"), addr("extensions", "a")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := newTestRouter(t, states(tt.insts...)...)
			f := &fakeChain{answer: tt.answer}
			got, err := Invoke(context.Background(), rt, tt.gv, f.call)
			switch {
			case tt.wantErr == nil:
				require.NoError(t, err)
				assert.Equal(t, tt.want, got)
			case status.Code(tt.wantErr) != codes.Unknown:
				require.Error(t, err)
				assert.Equal(t, status.Convert(tt.wantErr).Proto().String(), status.Convert(err).Proto().String())
				assert.Empty(t, got)
			default:
				assert.ErrorIs(t, err, tt.wantErr)
				assert.Empty(t, got)
			}
			switch {
			case tt.wantCallCount > 0:
				assert.Len(t, f.calls, tt.wantCallCount, "calls: %v", f.calls)
			case tt.anyOrderCalls:
				assert.ElementsMatch(t, tt.wantCalls, f.calls)
			default:
				assert.Equal(t, nilIfEmpty(tt.wantCalls), nilIfEmpty(f.calls))
			}
		})
	}
}

func TestInvokeUnavailableRetriesAnotherInstance(t *testing.T) {
	rt := newTestRouter(t, states(completeChain(
		instance{svc: "core", id: "b", served: []string{"v1"}},
		instance{svc: "core", id: "c", served: []string{"v1"}},
		instance{svc: "core", id: "d", served: []string{"v1"}},
	)...)...)
	// Whichever replica the round-robin picks first is unreachable, and so is the second.
	for range 3 {
		f := &fakeChain{seq: []error{errUnavailable, errUnavailable}}
		got, err := Invoke(context.Background(), rt, "v1", f.call)
		require.NoError(t, err)
		require.Len(t, f.calls, 3)
		assert.ElementsMatch(t, []string{addr("core", "b"), addr("core", "c"), addr("core", "d")}, f.calls,
			"each replica tried once, never another service")
		assert.Equal(t, "from "+f.calls[2], got)
	}
}

func TestInvokeUnavailableWithCancelledContextIsReturned(t *testing.T) {
	rt := newTestRouter(t, states(completeChain(
		instance{svc: "core", id: "b", served: []string{"v1"}},
		instance{svc: "core", id: "c", served: []string{"v1"}},
	)...)...)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f := &fakeChain{answer: map[string]error{addr("core", "b"): errUnavailable, addr("core", "c"): errUnavailable}}
	_, err := Invoke(ctx, rt, "v1", f.call)
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.Len(t, f.calls, 1, "no retry once the caller gave up")
}

// plainBackend serves a ResourceService without TLS on 127.0.0.1:0 until the test ends.
func plainBackend(t *testing.T, rs resourcev1.ResourceServiceServer) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	resourcev1.RegisterResourceServiceServer(srv, rs)
	done := make(chan struct{})
	go func() { _ = srv.Serve(ln); close(done) }()
	t.Cleanup(func() { srv.Stop(); <-done })
	return ln.Addr().String()
}

// notServed answers like a backend without resources (backend.NotServedResources).
type notServed struct {
	resourcev1.UnimplementedResourceServiceServer
}

func (notServed) Get(_ context.Context, r *resourcev1.GetRequest) (*resourcev1.GetResponse, error) {
	return nil, rpcstatus.NotServed(r.GetRef().GetResource())
}

type getServer struct {
	resourcev1.UnimplementedResourceServiceServer
	name string
}

func (s getServer) Get(context.Context, *resourcev1.GetRequest) (*resourcev1.GetResponse, error) {
	return &resourcev1.GetResponse{Body: &resourcev1.Body{ContentType: "application/json", Data: []byte(`{"from":"` + s.name + `"}`)}}, nil
}

// TestInvokeRealBackends runs invoke against plaintext in-process gRPC servers: a "not served"
// aggregator, a core replica whose port is closed and a live core replica.
func TestInvokeRealBackends(t *testing.T) {
	aggregator := plainBackend(t, notServed{})
	live := plainBackend(t, getServer{name: "core-live"})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := ln.Addr().String()
	require.NoError(t, ln.Close())

	reg := lifecycle.NewRegistry(time.Hour)
	for _, st := range []*lifecyclev1.InstanceState{
		{Service: "aggregator", InstanceId: "a", Address: aggregator, Ready: true},
		{Service: "core", InstanceId: "dead", Address: dead, Ready: true, Served: []string{"v1"}},
		{Service: "core", InstanceId: "live", Address: live, Ready: true, Served: []string{"v1"}},
		{Service: "extensions", InstanceId: "a", Address: dead, Ready: false},
	} {
		reg.Upsert(st, lifecycle.SourceNATS)
	}
	rt := NewRouter(reg, newTestPool(t))

	get := func(ctx context.Context, c grpc.ClientConnInterface) (*resourcev1.GetResponse, error) {
		return resourcev1.NewResourceServiceClient(c).Get(ctx, &resourcev1.GetRequest{Ref: &resourcev1.ResourceRef{Version: "v1", Resource: "pods", Name: "p"}})
	}
	call := func(gv string) (*resourcev1.GetResponse, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		return Invoke(ctx, rt, gv, get)
	}

	// Routed to core; twice, so both round-robin orders of its replicas are tried.
	for i := range 2 {
		resp, err := call("v1")
		require.NoError(t, err, "attempt %d", i)
		assert.JSONEq(t, `{"from":"core-live"}`, string(resp.GetBody().GetData()))
	}

	// Only the dead replica left: Unavailable (503), not the end of the chain.
	reg.Remove(lifecycle.Key("core", "live"))
	_, err = call("v1")
	assert.Equal(t, codes.Unavailable, status.Code(err), "err = %v", err)

	// A miss asks the chain: the aggregator does not serve it, core does.
	reg.Remove(lifecycle.Key("core", "dead"))
	reg.Upsert(&lifecyclev1.InstanceState{Service: "core", InstanceId: "live", Address: live, Ready: true}, lifecycle.SourceNATS)
	resp, err := call("nope/v1")
	require.NoError(t, err)
	assert.JSONEq(t, `{"from":"core-live"}`, string(resp.GetBody().GetData()))

	// Only the aggregator left: it does not serve it, and the chain never completed (no
	// MuxAndDiscoveryComplete signals): 503 while starting, not 404.
	reg.Remove(lifecycle.Key("core", "live"))
	_, err = call("v1")
	assert.ErrorIs(t, err, ErrChainIncomplete)
}

func TestPoolReusesAndRetains(t *testing.T) {
	p := newTestPool(t)
	a1, err := p.Get("a.invalid:1")
	require.NoError(t, err)
	a2, err := p.Get("a.invalid:1")
	require.NoError(t, err)
	assert.Same(t, a1, a2)
	_, err = p.Get("b.invalid:1")
	require.NoError(t, err)

	p.Retain(map[string]bool{"a.invalid:1": true})
	p.mu.Lock()
	kept := make([]string, 0, len(p.conns))
	for k := range p.conns {
		kept = append(kept, k)
	}
	p.mu.Unlock()
	sort.Strings(kept)
	assert.Equal(t, []string{"a.invalid:1"}, kept)

	p.CloseAll()
	assert.Empty(t, p.conns)
}

func stateOf(shuttingDown bool) lifecyclev1.State {
	if shuttingDown {
		return lifecyclev1.State_STATE_STOPPING
	}
	return lifecyclev1.State_STATE_RUNNING
}

// slowServer holds each Get until release is closed, and streams one event per Watch, then
// holds it until release is closed too.
type slowServer struct {
	resourcev1.UnimplementedResourceServiceServer
	started chan struct{}
	release chan struct{}
}

func (s slowServer) Get(context.Context, *resourcev1.GetRequest) (*resourcev1.GetResponse, error) {
	s.started <- struct{}{}
	<-s.release
	return &resourcev1.GetResponse{Body: &resourcev1.Body{Data: []byte("done")}}, nil
}

func (s slowServer) Watch(_ *resourcev1.WatchRequest, stream grpc.ServerStreamingServer[resourcev1.WatchResponse]) error {
	if err := stream.Send(&resourcev1.WatchResponse{}); err != nil {
		return err
	}
	s.started <- struct{}{}
	<-s.release
	return stream.Send(&resourcev1.WatchResponse{})
}

// A connection that leaves the pool while calls are on it closes only after they finish:
// they complete; a caller still holding it afterwards is given a new connection.
func TestPoolDrainsRetiredConnections(t *testing.T) {
	srv := slowServer{started: make(chan struct{}, 2), release: make(chan struct{})}
	addr := plainBackend(t, srv)
	p := newTestPool(t)
	c, err := p.Get(addr)
	require.NoError(t, err)
	client := resourcev1.NewResourceServiceClient(c)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	got := make(chan error, 1)
	go func() {
		resp, err := client.Get(ctx, &resourcev1.GetRequest{})
		if err == nil && string(resp.GetBody().GetData()) != "done" {
			err = errors.New("unexpected answer")
		}
		got <- err
	}()
	<-srv.started
	stream, err := client.Watch(ctx, &resourcev1.WatchRequest{})
	require.NoError(t, err)
	_, err = stream.Recv()
	require.NoError(t, err)
	<-srv.started

	p.Retain(nil) // the instance left the routing set, with a call and a watch on it
	assert.NotEqual(t, connectivity.Shutdown, c.GetState(), "not closed under its calls")
	close(srv.release)
	require.NoError(t, <-got, "the unary call completed")
	_, err = stream.Recv()
	require.NoError(t, err, "the watch went on")
	_, err = stream.Recv()
	assert.ErrorIs(t, err, io.EOF)
	require.Eventually(t, func() bool { return c.GetState() == connectivity.Shutdown }, 10*time.Second, 10*time.Millisecond,
		"closed after the last call")

	// A caller that picked it before it left: the call goes on a new connection.
	_, err = client.Get(ctx, &resourcev1.GetRequest{})
	require.NoError(t, err)
	fresh, err := p.Get(addr)
	require.NoError(t, err)
	assert.NotSame(t, c, fresh)

	// A connection without calls closes at once.
	p.Retain(nil)
	assert.Equal(t, connectivity.Shutdown, fresh.GetState())
}
