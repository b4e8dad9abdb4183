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

// Publisher keeps an instance's state in the lifecycle bucket: on every change, and at least
// every TTL/3 as a heartbeat. It deletes the key when stopped cleanly.
type Publisher struct {
	nc       *nats.Conn
	key      string
	ttl      time.Duration
	snapshot func() *lifecyclev1.InstanceState
	log      *slog.Logger
	changed  chan struct{}
}

// NewPublisher publishes snapshot() under key.
func NewPublisher(nc *nats.Conn, key string, ttl time.Duration, snapshot func() *lifecyclev1.InstanceState, log *slog.Logger) *Publisher {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	return &Publisher{nc: nc, key: key, ttl: ttl, snapshot: snapshot, log: log, changed: make(chan struct{}, 1)}
}

// Notify asks for a publish soon; many calls coalesce into one.
func (p *Publisher) Notify() {
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

// Run publishes until ctx is done, then publishes a last time and deletes the key.
func (p *Publisher) Run(ctx context.Context) {
	var kv jetstream.KeyValue
	heartbeat := time.NewTicker(p.ttl / 3)
	defer heartbeat.Stop()
	publish := func() {
		// Snapshot first: it runs the readyz checks, which may be slow (etcd down), and must
		// not eat the time the Put has.
		data, err := proto.Marshal(p.snapshot())
		if err != nil {
			p.log.Error("marshal lifecycle state", "err", err)
			return
		}
		pctx, cancel := context.WithTimeout(ctx, p.ttl/3)
		defer cancel()
		if kv == nil {
			if kv, err = openBucket(pctx, p.nc, p.ttl); err != nil {
				p.log.Debug("lifecycle bucket not available", "err", err)
				return
			}
		}
		if _, err := kv.Put(pctx, p.key, data); err != nil {
			p.log.Debug("publish lifecycle state", "err", err)
			kv = nil // rebind: NATS may have restarted without the bucket
		}
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
		}
		publish()
	}
}
