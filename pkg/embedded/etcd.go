package embedded

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
	"google.golang.org/grpc"
)

// Etcd is a running in-process single-member etcd.
type Etcd struct {
	e            *embed.Etcd
	endpointFile string
}

// streamWorkers is how many goroutines of the embedded etcd's gRPC server take requests one
// after another: a request on a fresh goroutine grows its stack to the depth of etcd's handler
// every time (copying it at each doubling, a tenth of a get's CPU), one on a worker finds it
// grown. A request that finds every worker busy gets a goroutine of its own, as without them.
const streamWorkers = 16

// StartEtcd starts etcd storing under dir/etcd, serving clients on 127.0.0.1:clientPort and
// peers on 127.0.0.1:peerPort (0 picks a free port). It gives up when ctx is done (a signal
// during startup), even while etcd waits on its database's lock.
func StartEtcd(ctx context.Context, dir string, clientPort, peerPort int) (*Etcd, error) {
	for _, p := range []*int{&clientPort, &peerPort} {
		if *p == 0 {
			free, err := freePort()
			if err != nil {
				return nil, err
			}
			*p = free
		}
	}
	cfg := embed.NewConfig()
	cfg.Name = EtcdMemberName
	cfg.Dir = filepath.Join(dir, "etcd")
	// Closing etcd logs harmless error lines; real failures come back as errors from here.
	cfg.LogLevel = "fatal"
	cu := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", clientPort)}
	pu := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", peerPort)}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{cu}, []url.URL{cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{pu}, []url.URL{pu}
	cfg.InitialCluster = cfg.Name + "=" + pu.String()
	// One member elects itself: short ticks make that (and so startup) fast without the
	// risk they would carry in a real cluster. A new member elects itself 1 to 10 ticks after
	// it starts (10 ms ticks: 55 ms on average; 5 ms: 27 ms); a tick costs an idle all-in-one
	// about half a percent of a core at 5 ms (2.5% in all against 1.9%).
	cfg.TickMs, cfg.ElectionMs = 5, 50
	// One member has no follower to catch up: its raft log in memory need not keep etcd's
	// default 5,000 entries after a snapshot, nor wait 10,000 for the next one (at 20,000
	// ConfigMaps of 1 KiB that is 10-20 MB of live heap, twice that resident). A snapshot every
	// 1,000 writes keeps at most 1,100 entries; each costs a millisecond or two.
	cfg.SnapshotCount, cfg.SnapshotCatchUpEntries = 1000, 100
	cfg.GRPCAdditionalServerOptions = []grpc.ServerOption{grpc.NumStreamWorkers(streamWorkers)}
	type started struct {
		e   *embed.Etcd
		err error
	}
	done := make(chan started, 1)
	go func() {
		e, err := embed.StartEtcd(cfg)
		done <- started{e, err}
	}()
	var e *embed.Etcd
	select {
	case s := <-done:
		if s.err != nil {
			return nil, fmt.Errorf("etcd: %w", s.err)
		}
		e = s.e
	case <-ctx.Done():
		go func() { // etcd may still start: close it then
			if s := <-done; s.e != nil {
				s.e.Close()
			}
		}()
		return nil, fmt.Errorf("etcd: not started: %w", context.Cause(ctx))
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, fmt.Errorf("etcd: not ready within 60s")
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("etcd: %w", err)
	case <-ctx.Done():
		e.Close()
		return nil, fmt.Errorf("etcd: not ready: %w", context.Cause(ctx))
	}
	et := &Etcd{e: e, endpointFile: filepath.Join(dir, EtcdEndpointFile)}
	if err := os.WriteFile(et.endpointFile, []byte(strings.Join(et.Endpoints(), ",")+"\n"), 0o600); err != nil {
		e.Close()
		return nil, fmt.Errorf("etcd: %w", err)
	}
	return et, nil
}

// EtcdMemberName is the embedded etcd's member name (a restore must give the same).
const EtcdMemberName = "apichain"

// EtcdEndpointFile, in the directory an embedded etcd was started with, holds its client URLs
// while it runs, for tools such as "apichain etcd snapshot save" (its port is picked at start).
const EtcdEndpointFile = "etcd-endpoint"

// RunningEtcdEndpoints are the client URLs of the embedded etcd running on dir.
func RunningEtcdEndpoints(dir string) ([]string, error) {
	data, err := os.ReadFile(filepath.Join(dir, EtcdEndpointFile))
	if err != nil {
		return nil, fmt.Errorf("no embedded etcd running on %s: %w", dir, err)
	}
	return strings.Split(strings.TrimSpace(string(data)), ","), nil
}

// Endpoints are the client URLs actually bound.
func (e *Etcd) Endpoints() []string {
	var out []string
	for _, l := range e.e.Clients {
		out = append(out, "http://"+l.Addr().String())
	}
	return out
}

// Client is a client of this etcd that calls its server in the process, without a
// connection (etcd's v3client): no gRPC transport or loopback socket on each request (gets
// through the all-in-one 1.14-1.45 times as many). It has no endpoints (storage.Members).
// Close it before Stop.
func (e *Etcd) Client() *clientv3.Client {
	c := v3client.New(e.e.Server)
	c.Watcher = ownEvents{c.Watcher}
	return c
}

// ownEvents gives each watch its own copies of its events' key-values. In the process, the
// watches of one change share the server's KeyValue, which a gRPC connection would have
// decoded for each; a namespace.Watcher re-slices the keys it hands on in place, so two
// prefixed watches of one key would strip the prefix twice.
type ownEvents struct{ clientv3.Watcher }

func (w ownEvents) Watch(ctx context.Context, key string, opts ...clientv3.OpOption) clientv3.WatchChan {
	in := w.Watcher.Watch(ctx, key, opts...)
	out := make(chan clientv3.WatchResponse)
	go func() {
		defer close(out)
		for resp := range in {
			for _, ev := range resp.Events {
				ev.Kv = copyKV(ev.Kv)
				ev.PrevKv = copyKV(ev.PrevKv)
			}
			select {
			case out <- resp:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

func copyKV(kv *mvccpb.KeyValue) *mvccpb.KeyValue {
	if kv == nil {
		return nil
	}
	return &mvccpb.KeyValue{Key: kv.Key, CreateRevision: kv.CreateRevision, ModRevision: kv.ModRevision,
		Version: kv.Version, Value: kv.Value, Lease: kv.Lease}
}

// Stop closes etcd; its data stays under the directory it was started with.
func (e *Etcd) Stop() {
	e.e.Close()
	_ = os.Remove(e.endpointFile)
}

// freePort asks the kernel for a free loopback port; etcd needs the number before it binds.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
