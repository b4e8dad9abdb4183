package lifecycle

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Bucket is the JetStream KV bucket holding one key per live instance.
const Bucket = "apichain-lifecycle"

// DefaultTTL is how long an instance's state lives without a heartbeat.
const DefaultTTL = 5 * time.Second

// KV is how the lifecycle bucket is kept: how long a state lives without a heartbeat, and on
// how many NATS nodes of a JetStream cluster (1 for a single server). Every process of a
// deployment must give the same, or each open would change the bucket back to its own.
type KV struct {
	TTL      time.Duration
	Replicas int
}

func (k KV) ttl() time.Duration {
	if k.TTL <= 0 {
		return DefaultTTL
	}
	return k.TTL
}

// openBucket creates or binds the lifecycle bucket. Memory storage: the state is republished
// by heartbeats, so nothing is lost when NATS restarts; with replicas, nothing is lost when
// one node stops either, and the bucket keeps answering.
func openBucket(ctx context.Context, nc *nats.Conn, k KV) (jetstream.KeyValue, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	return js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:   Bucket,
		History:  1,
		TTL:      k.ttl(),
		Storage:  jetstream.MemoryStorage,
		Replicas: max(k.Replicas, 1),
	})
}

// Connect dials NATS and keeps reconnecting forever, so a process started before NATS, or
// one that outlives a NATS restart, recovers by itself. creds, when set, are its TLS and
// user credentials.
func Connect(url, name string, creds ...nats.Option) (*nats.Conn, error) {
	return nats.Connect(url, append([]nats.Option{
		nats.Name(name),
		nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.Timeout(2 * time.Second),
	}, creds...)...)
}
