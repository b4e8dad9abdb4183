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

// openBucket creates or binds the lifecycle bucket. Memory storage: the state is republished
// by heartbeats, so nothing is lost when NATS restarts.
func openBucket(ctx context.Context, nc *nats.Conn, ttl time.Duration) (jetstream.KeyValue, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	return js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:  Bucket,
		History: 1,
		TTL:     ttl,
		Storage: jetstream.MemoryStorage,
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
