package lifecycle

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	lifecyclev1 "github.com/apichain/apichain/gen/apichain/lifecycle/v1"
	"github.com/apichain/apichain/pkg/embedded"
	"github.com/apichain/apichain/pkg/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var natsURL string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "lifecycle-test")
	if err != nil {
		panic(err)
	}
	n, err := embedded.StartNATS(dir, "127.0.0.1", 0)
	if err != nil {
		panic(err)
	}
	natsURL = n.URL()
	code := m.Run()
	n.Stop()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func connect(t *testing.T) *nats.Conn {
	t.Helper()
	nc, err := Connect(natsURL, t.Name())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	return nc
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, 15*time.Second, 20*time.Millisecond, "waiting for %s", what)
}

func TestPublishWatchGoodbyeAndExpiry(t *testing.T) {
	ttl := 900 * time.Millisecond
	reg := NewRegistry(ttl)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go WatchNATS(ctx, connect(t), KV{TTL: ttl}, reg, quiet)

	state := func(id string, ready bool) func() *lifecyclev1.InstanceState {
		return func() *lifecyclev1.InstanceState {
			return &lifecyclev1.InstanceState{Service: "core", InstanceId: id, Address: "127.0.0.1:1", Ready: ready}
		}
	}
	// a: stops cleanly (deletes its key); b: dies without a goodbye (its connection closes).
	pa := NewPublisher(connect(t), Key("core", "a"), KV{TTL: ttl}, state("a", true), quiet)
	actx, stopA := context.WithCancel(ctx)
	aDone := make(chan struct{})
	go func() { pa.Run(actx); close(aDone) }()
	pa.Notify()
	ncB := connect(t)
	pb := NewPublisher(ncB, Key("core", "b"), KV{TTL: ttl}, state("b", false), quiet)
	bctx, killB := context.WithCancel(ctx)
	go pb.Run(bctx)
	pb.Notify()

	eventually(t, "both instances", func() bool { return len(reg.Service("core")) == 2 })
	assert.Equal(t, SourceNATS, reg.Source())
	insts := reg.Service("core")
	assert.True(t, Routable(insts[0]))
	assert.False(t, Routable(insts[1]), "b is not ready")

	// A late subscriber catches up from the bucket.
	late := NewRegistry(ttl)
	go WatchNATS(ctx, connect(t), KV{TTL: ttl}, late, quiet)
	eventually(t, "late subscriber catch-up", func() bool { return len(late.Service("core")) == 2 })

	stopA()
	<-aDone
	eventually(t, "a's goodbye", func() bool { return len(reg.Service("core")) == 1 })

	ncB.Close() // b can no longer heartbeat or say goodbye
	killB()
	eventually(t, "b's expiry", func() bool { return len(reg.Service("core")) == 0 })
}

func TestRegistryExpiry(t *testing.T) {
	reg := NewRegistry(time.Second)
	now := time.Unix(1000, 0)
	reg.now = func() time.Time { return now }
	changes := 0
	reg.OnChange(func() { changes++ })
	changed := reg.Changed()
	reg.Upsert(&lifecyclev1.InstanceState{Service: "core", InstanceId: "x"}, SourceNATS)
	assert.Len(t, reg.Instances(), 1)
	assert.True(t, closed(changed), "Changed is closed by the change")
	changed = reg.Changed()
	assert.False(t, closed(changed), "and a new one waits for the next")
	now = now.Add(1500 * time.Millisecond)
	assert.Empty(t, reg.Instances())
	assert.Equal(t, 2, changes)
	assert.True(t, closed(changed), "an expiry is a change")
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// The published state is server.State converted by number: the two enums must agree.
func TestStateNumbersMatchTheProto(t *testing.T) {
	for _, st := range []server.State{server.StateNew, server.StateStarting, server.StateRunning,
		server.StateStopping, server.StateTerminated, server.StateFailed} {
		assert.Equal(t, "STATE_"+strings.ToUpper(st.String()), lifecyclev1.State(st).String())
	}
}

// A watch whose consumer vanishes (it lived on a NATS node that stopped) delivers nothing
// while the connection stays up; nats.go notices only after two missed idle heartbeats
// (10 s). The watcher notices the missing instance heartbeats first and watches again, so
// no state expires meanwhile.
func TestStalledWatchIsStartedAgain(t *testing.T) {
	ttl := 1500 * time.Millisecond
	kvc := KV{TTL: ttl}
	reg := NewRegistry(ttl)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go WatchNATS(ctx, connect(t), kvc, reg, quiet)
	p := NewPublisher(connect(t), Key("stall", "a"), kvc, func() *lifecyclev1.InstanceState {
		return &lifecyclev1.InstanceState{Service: "stall", InstanceId: "a", Address: "127.0.0.1:1", Ready: true}
	}, quiet)
	go p.Run(ctx)
	p.Notify()
	eventually(t, "the instance", func() bool { return len(reg.Service("stall")) == 1 })

	js, err := jetstream.New(connect(t))
	require.NoError(t, err)
	stream, err := js.Stream(ctx, "KV_"+Bucket)
	require.NoError(t, err)
	names := stream.ConsumerNames(ctx)
	deleted := 0
	for name := range names.Name() {
		require.NoError(t, stream.DeleteConsumer(ctx, name))
		deleted++
	}
	require.NoError(t, names.Err())
	require.Positive(t, deleted, "the watch's consumer")

	// Over three TTLs, the state never expires from the registry (expiry is checked on read).
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.After(3 * ttl); ; {
		require.Len(t, reg.Service("stall"), 1, "the instance's state expired while its watch was stalled")
		select {
		case <-deadline:
			return
		case <-tick.C:
		}
	}
}

// Another backend's reads may go to an instance that serves its API before it is ready; not
// to one that has not installed its routes, nor to one stopping.
func TestServing(t *testing.T) {
	mux := []*lifecyclev1.Signal{{Name: "MuxAndDiscoveryComplete"}}
	for _, c := range []struct {
		st   *lifecyclev1.InstanceState
		want bool
	}{
		{&lifecyclev1.InstanceState{State: lifecyclev1.State_STATE_NEW}, false},
		{&lifecyclev1.InstanceState{State: lifecyclev1.State_STATE_STARTING}, false},
		{&lifecyclev1.InstanceState{State: lifecyclev1.State_STATE_STARTING, Signals: mux}, true},
		{&lifecyclev1.InstanceState{State: lifecyclev1.State_STATE_RUNNING, Signals: mux, Ready: true}, true},
		{&lifecyclev1.InstanceState{State: lifecyclev1.State_STATE_STOPPING, Signals: mux}, false},
	} {
		assert.Equal(t, c.want, Serving(c.st), "%v", c.st)
		assert.False(t, Routable(c.st) && !Serving(c.st), "a ready instance serves")
	}
}
