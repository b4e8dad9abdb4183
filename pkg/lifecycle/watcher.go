package lifecycle

import (
	"context"
	"log/slog"
	"time"

	lifecyclev1 "github.com/apichain/apichain/gen/apichain/lifecycle/v1"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"
)

// WatchNATS keeps reg up to date from the lifecycle bucket until ctx is done. While NATS is
// unreachable it marks reg's source as gRPC so the fallback poller takes over.
func WatchNATS(ctx context.Context, nc *nats.Conn, ttl time.Duration, reg *Registry, log *slog.Logger) {
	for ctx.Err() == nil {
		if err := watchOnce(ctx, nc, ttl, reg); err != nil && ctx.Err() == nil {
			log.Debug("lifecycle watch interrupted", "err", err)
		}
		reg.SetSource(SourceGRPC)
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func watchOnce(ctx context.Context, nc *nats.Conn, ttl time.Duration, reg *Registry) error {
	if !nc.IsConnected() {
		return nats.ErrConnectionClosed
	}
	openCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	kv, err := openBucket(openCtx, nc, ttl)
	cancel()
	if err != nil {
		return err
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	w, err := kv.WatchAll(wctx)
	if err != nil {
		return err
	}
	defer func() { _ = w.Stop() }()
	reg.SetSource(SourceNATS)
	// Leave when the connection drops: the watch would silently stall otherwise.
	check := time.NewTicker(500 * time.Millisecond)
	defer check.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-check.C:
			if !nc.IsConnected() {
				return nats.ErrDisconnected
			}
		case e, ok := <-w.Updates():
			if !ok {
				return nats.ErrConnectionClosed
			}
			if e == nil { // initial values delivered
				reg.MarkSynced()
				continue
			}
			apply(reg, e)
		}
	}
}

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
