package embedded

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/namespace"
)

// The in-process client reads, writes and watches as a connected one does: prefixed watches
// of one key each see it once unprefixed (they share the server's events in the process), and
// its one member answers for its status.
func TestInProcessClient(t *testing.T) {
	e, err := StartEtcd(context.Background(), t.TempDir(), 0, 0)
	require.NoError(t, err)
	defer e.Stop()
	c := e.Client()
	defer c.Close()
	assert.Empty(t, c.Endpoints())
	_, err = c.Status(context.Background(), "")
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, w := namespace.NewKV(c.KV, "/registry/"), namespace.NewWatcher(c.Watcher, "/registry/")
	start, err := kv.Get(ctx, "configmaps/")
	require.NoError(t, err)
	var watches []clientv3.WatchChan
	for range 3 { // from the next revision: the writes below, however soon they land
		watches = append(watches, w.Watch(ctx, "configmaps/", clientv3.WithPrefix(), clientv3.WithPrevKV(), clientv3.WithRev(start.Header.Revision+1)))
	}
	_, err = kv.Put(ctx, "configmaps/a", "1")
	require.NoError(t, err)
	_, err = kv.Put(ctx, "configmaps/a", "2")
	require.NoError(t, err)
	for i, wch := range watches {
		var keys, values, prev []string
		for len(keys) < 2 {
			select {
			case resp := <-wch:
				require.NoError(t, resp.Err())
				for _, ev := range resp.Events {
					keys, values = append(keys, string(ev.Kv.Key)), append(values, string(ev.Kv.Value))
					if ev.PrevKv != nil {
						prev = append(prev, string(ev.PrevKv.Key)+"="+string(ev.PrevKv.Value))
					}
				}
			case <-ctx.Done():
				t.Fatalf("watch %d: %v after %v", i, ctx.Err(), keys)
			}
		}
		assert.Equal(t, []string{"configmaps/a", "configmaps/a"}, keys, "watch %d", i)
		assert.Equal(t, []string{"1", "2"}, values, "watch %d", i)
		assert.Equal(t, []string{"configmaps/a=1"}, prev, "watch %d", i)
	}
	resp, err := kv.Get(ctx, "configmaps/", clientv3.WithPrefix())
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1)
	assert.Equal(t, "configmaps/a", string(resp.Kvs[0].Key))
}
