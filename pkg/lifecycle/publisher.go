package lifecycle

import (
	"context"
	"log/slog"
	"time"

	lifecyclev1 "github.com/apichain/apichain/gen/apichain/lifecycle/v1"
	"github.com/apichain/apichain/pkg/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"
)

// Publisher keeps an instance's state in the lifecycle bucket: on every change, and at least
// every TTL/3 as a heartbeat. It deletes the key when stopped cleanly.
type Publisher struct {
	nc       *nats.Conn
	key      string
	kv       KV
	snapshot func() *lifecyclev1.InstanceState
	log      *slog.Logger
	changed  chan struct{}
}

// Announce publishes srv's state as the instance inst() describes over nc until ctx ends,
// then deletes it: at every change of srv (hooks, signals, state, readiness, and whatever
// NotifyChange reports, such as the served group/versions) and by heartbeat. Run it
// alongside the server (server.RunAlongside) so the goodbye comes after the server stopped.
func Announce(ctx context.Context, nc *nats.Conn, srv *server.Server, inst func() Instance, kv KV, log *slog.Logger) {
	first := inst()
	p := NewPublisher(nc, Key(first.Service, first.InstanceID), kv, func() *lifecyclev1.InstanceState { return Snapshot(srv, inst()) }, log)
	srv.OnChange(p.Notify)
	p.Notify()
	p.Run(ctx)
}

// NewPublisher publishes snapshot() under key.
func NewPublisher(nc *nats.Conn, key string, kv KV, snapshot func() *lifecyclev1.InstanceState, log *slog.Logger) *Publisher {
	return &Publisher{nc: nc, key: key, kv: kv, snapshot: snapshot, log: log, changed: make(chan struct{}, 1)}
}

// Notify asks for a publish soon; many calls coalesce into one.
func (p *Publisher) Notify() {
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

// Run publishes until ctx is done, then deletes the key: the instance's goodbye, which
// takes it out of every gateway's view at once instead of after the TTL.
func (p *Publisher) Run(ctx context.Context) {
	var kv jetstream.KeyValue
	heartbeat := time.NewTicker(p.kv.ttl() / 3)
	defer heartbeat.Stop()
	// A failed publish is tried again soon, backing off to the heartbeat: a heartbeat lost
	// while the client moves to another node, or while a JetStream leader is elected, must
	// not cost the instance its place in every gateway's view (TTL).
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	backoff := time.Duration(0)
	lastOK, warned := time.Now(), false
	publish := func() error {
		data, err := proto.Marshal(p.snapshot())
		if err != nil {
			p.log.Error("marshal lifecycle state", "err", err)
			return nil
		}
		// A put takes milliseconds; one that hangs (no leader yet) is given up in time for
		// a retry within the same heartbeat.
		pctx, cancel := context.WithTimeout(ctx, p.kv.ttl()/5)
		defer cancel()
		if kv == nil {
			if kv, err = openBucket(pctx, p.nc, p.kv); err != nil {
				return err
			}
		}
		if _, err := kv.Put(pctx, p.key, data); err != nil {
			kv = nil // rebind: NATS may have restarted without the bucket
			return err
		}
		return nil
	}
	for {
		select {
		case <-ctx.Done():
			stopCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			if kv != nil {
				if err := kv.Delete(stopCtx, p.key); err != nil {
					p.log.Debug("delete lifecycle state", "err", err)
				}
			}
			cancel()
			return
		case <-p.changed:
		case <-heartbeat.C:
		case <-retry.C:
		}
		if err := publish(); err != nil {
			backoff = min(max(2*backoff, 250*time.Millisecond), p.kv.ttl()/3)
			p.log.Debug("publish lifecycle state", "err", err, "retry", backoff)
			if since := time.Since(lastOK); !warned && since > p.kv.ttl()/2 {
				p.log.Warn("lifecycle state not published: gateways drop this instance if it stays so", "for", since.Round(time.Millisecond), "ttl", p.kv.ttl(), "err", err)
				warned = true
			}
			retry.Reset(backoff)
		} else {
			if warned {
				p.log.Info("lifecycle state published again", "after", time.Since(lastOK).Round(time.Millisecond))
			}
			backoff, lastOK, warned = 0, time.Now(), false
		}
	}
}
