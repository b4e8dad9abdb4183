package lifecycle

import (
	"context"
	"errors"
	"log/slog"
	"time"

	lifecyclev1 "github.com/apichain/apichain/gen/apichain/lifecycle/v1"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"
)

// WatchNATS keeps reg up to date from the lifecycle bucket until ctx is done. While NATS is
// unreachable it marks reg's source as gRPC so the fallback poller takes over; not at once,
// though: what the watch delivered stays good until a heartbeat is missed (TTL/3), which is
// time enough for the client to move to another node of a cluster (a node stopped in lame
// duck mode, a JetStream leader elected anew) and watch again.
//
// A watch can also stall while the connection stays up: its consumer lived on a node that
// stopped, and the client notices only after two missed idle heartbeats (10 s), by which
// time every instance's state would have expired. Every live instance republishes at least
// every TTL/3, so a watch that delivered nothing for longer than stallAfter while instances
// are known is stalled, and is started again; its initial values refresh every state.
func WatchNATS(ctx context.Context, nc *nats.Conn, kv KV, reg *Registry, log *slog.Logger) {
	var watched time.Time // when a watch last ended having delivered
	for ctx.Err() == nil {
		ok, err := watchOnce(ctx, nc, kv, reg)
		switch {
		case errors.Is(err, errStalled):
			log.Info("lifecycle watch started again", "reason", err)
		case err != nil && ctx.Err() == nil:
			log.Debug("lifecycle watch interrupted", "err", err)
		}
		if ok {
			watched = time.Now()
		}
		if time.Since(watched) > kv.ttl()/3 {
			reg.SetSource(SourceGRPC)
		}
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// watchOnce watches the bucket until the watch or the connection ends; watched says whether
// it delivered the bucket's state.
func watchOnce(ctx context.Context, nc *nats.Conn, k KV, reg *Registry) (watched bool, err error) {
	if !nc.IsConnected() {
		return false, nats.ErrConnectionClosed
	}
	openCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	kv, err := openBucket(openCtx, nc, k)
	cancel()
	if err != nil {
		return false, err
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	w, err := kv.WatchAll(wctx)
	if err != nil {
		return false, err
	}
	defer func() { _ = w.Stop() }()
	reg.SetSource(SourceNATS)
	// Leave when the connection drops or the watch stalls.
	check := time.NewTicker(250 * time.Millisecond)
	defer check.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return watched, nil
		case <-check.C:
			if !nc.IsConnected() {
				return watched, nats.ErrDisconnected
			}
			if watched && time.Since(last) > stallAfter(k) && len(reg.Instances()) > 0 {
				return watched, errStalled
			}
		case e, ok := <-w.Updates():
			if !ok {
				return watched, nats.ErrConnectionClosed
			}
			last = time.Now()
			if e == nil { // initial values delivered
				reg.MarkSynced()
				watched = true
				continue
			}
			apply(reg, e)
		}
	}
}

var errStalled = errors.New("no heartbeat from any instance: watch stalled")

// stallAfter is how long a watch may deliver nothing while instances are known: past every
// instance's heartbeat (TTL/3) with room for a slow publish, and early enough that a new
// watch delivers before any state expires (TTL).
func stallAfter(k KV) time.Duration { return k.ttl() * 3 / 5 }

func apply(reg *Registry, e jetstream.KeyValueEntry) {
	switch e.Operation() {
	case jetstream.KeyValueDelete, jetstream.KeyValuePurge:
		reg.Remove(e.Key())
	default:
		st := &lifecyclev1.InstanceState{}
		if err := proto.Unmarshal(e.Value(), st); err != nil {
			return
		}
		reg.Upsert(st, SourceNATS)
	}
}
