package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/namespace"
	"google.golang.org/grpc/metadata"
	"k8s.io/apimachinery/pkg/runtime/schema"
	storagevalue "k8s.io/apiserver/pkg/storage/value"
)

// Errors of the store; the registry turns them into kube Status errors.
var (
	ErrNotFound      = errors.New("not found")
	ErrAlreadyExists = errors.New("already exists")
	ErrConflict      = errors.New("the object has been modified")
	ErrCompacted     = errors.New("resource version compacted")
	ErrFutureRV      = errors.New("resource version is in the future")
	// ErrNotOwned refuses a key of a kind another service owns: only the owner stores a kind.
	ErrNotOwned = errors.New("not owned by this service")
	// ErrTransform: a value could not be encrypted or decrypted (a key missing from the
	// encryption configuration, a KMS plugin down, a tampered value).
	ErrTransform = errors.New("storage transform failed")
)

// Store keeps objects as bytes under keys in etcd; an object's resource version is its
// etcd mod revision. Reads and writes ride through etcd's unavailability (a leader change, a
// member gone) within their request's deadline; see retry.go.
//
// Keys are kube's: relative to the etcd prefix (--etcd-prefix, "/registry" by default), which
// the store adds on the way to etcd and takes off on the way back, as kube's etcd3 store does
// ("/configmaps/default/x" is kept at "/registry/configmaps/default/x").
type Store struct {
	client  *clientv3.Client
	kv      clientv3.KV      // the client's under the prefix; tests put failures in between
	watcher clientv3.Watcher // the client's under the prefix
	prefix  string
	owns    func(key string) bool
	open    <-chan struct{} // Gated
	// resourceOf names the resource a key (or key prefix) is of, for encryption and metrics.
	resourceOf func(key string) (schema.GroupResource, bool)
	values     Transformers
}

// DefaultPrefix is where objects are kept in etcd unless told otherwise: kube-apiserver's
// --etcd-prefix default.
const DefaultPrefix = "/registry"

// Transformers give the transformer of each resource's values between what the registry
// writes and what etcd keeps: encryption at rest (pkg/storage/encryption).
type Transformers interface {
	For(gr schema.GroupResource) storagevalue.Transformer
}

// Encrypted returns a store whose values pass through t's transformer for their key's
// resource, with the key as authenticated data, as kube's etcd3 store does: written with the
// configuration's first provider, read with whichever wrote them.
func (s *Store) Encrypted(t Transformers) *Store {
	g := *s
	g.values = t
	return &g
}

// Resolving returns a store that learns which resource a key is of from resourceOf (the
// registry's layout), for the resource's encryption and its metrics' labels.
func (s *Store) Resolving(resourceOf func(key string) (schema.GroupResource, bool)) *Store {
	g := *s
	g.resourceOf = resourceOf
	return &g
}

// groupResource is the resource key (or a key prefix) is of. Without a layout, or for a key
// no resource has, it is named by its first segment, as kube's default prefixes are.
func (s *Store) groupResource(key string) schema.GroupResource {
	if s.resourceOf != nil {
		if gr, ok := s.resourceOf(key); ok {
			return gr
		}
	}
	first, _, _ := strings.Cut(strings.TrimPrefix(key, "/"), "/")
	return schema.GroupResource{Resource: first}
}

// transformer is the transformer of key's values, nil when values are kept as they are.
func (s *Store) transformer(key string) storagevalue.Transformer {
	if s.values == nil {
		return nil
	}
	return s.values.For(s.groupResource(key))
}

// toStorage is what etcd keeps for data under key.
func (s *Store) toStorage(ctx context.Context, key string, data []byte) ([]byte, error) {
	t := s.transformer(key)
	if t == nil {
		return data, nil
	}
	out, err := t.TransformToStorage(ctx, data, storagevalue.DefaultContext(s.prefix+key))
	if err != nil {
		return nil, fmt.Errorf("%w: unable to transform key %q: %v", ErrTransform, key, err)
	}
	return out, nil
}

// fromStorage is the value etcd keeps under key as written; stale when it was not written
// with the current configuration's first provider and should be written again.
func (s *Store) fromStorage(ctx context.Context, key string, data []byte) (out []byte, stale bool, err error) {
	return fromStorage(ctx, s.transformer(key), s.prefix+key, data)
}

// fromStorage reads data with t, the transformer of its key's resource (nil: as it is); key is
// the key in etcd, with the prefix: the authenticated data.
func fromStorage(ctx context.Context, t storagevalue.Transformer, key string, data []byte) (out []byte, stale bool, err error) {
	if t == nil || len(data) == 0 {
		return data, false, nil
	}
	out, stale, err = t.TransformFromStorage(ctx, data, storagevalue.DefaultContext(key))
	if err != nil {
		return nil, false, fmt.Errorf("%w: unable to transform key %q: %v", ErrTransform, key, err)
	}
	return out, stale, nil
}

// NewStore wraps an etcd client, keeping objects under prefix (kube's --etcd-prefix, taken
// as kube takes it: "registry", "/registry" and "/registry/" are one).
func NewStore(c *clientv3.Client, prefix string) *Store {
	prefix = CleanPrefix(prefix)
	return &Store{client: c, kv: namespace.NewKV(c.KV, prefix), watcher: namespace.NewWatcher(c.Watcher, prefix), prefix: prefix}
}

// CleanPrefix is the etcd prefix as kube joins keys to it ("" for the root).
func CleanPrefix(prefix string) string {
	prefix = path.Clean("/" + prefix)
	if prefix == "/" {
		return ""
	}
	return prefix
}

// Prefix is where the store keeps its keys in etcd.
func (s *Store) Prefix() string { return s.prefix }

// Guarded returns a store that refuses (ErrNotOwned) every key and prefix owns does not
// claim: a service's store touches only the kinds it serves.
func (s *Store) Guarded(owns func(key string) bool) *Store {
	g := *s
	g.owns = owns
	return &g
}

// check waits for the store to open (Gated), then refuses a key or prefix it does not own.
func (s *Store) check(ctx context.Context, key string) error {
	if err := s.WaitOpen(ctx); err != nil {
		return err
	}
	if s.owns != nil && !s.owns(key) {
		return fmt.Errorf("%w: %s", ErrNotOwned, key)
	}
	return nil
}

// Gated returns a store whose every call waits until open is closed: the backend opens it
// once it knows etcd holds kube's layout (an earlier apichain's is moved first), so nothing is
// read or written beside objects not yet moved.
func (s *Store) Gated(open <-chan struct{}) *Store {
	g := *s
	g.open = open
	return &g
}

// isOpen reports whether the store is open (Gated) now.
func (s *Store) isOpen() bool {
	if s.open == nil {
		return true
	}
	select {
	case <-s.open:
		return true
	default:
		return false
	}
}

// WaitOpen waits for the store to open (Gated), or ctx to end.
func (s *Store) WaitOpen(ctx context.Context) error {
	if s.isOpen() {
		return nil
	}
	select {
	case <-s.open:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: waiting for the storage layout check: %v", ErrUnavailable, ctx.Err())
	}
}

// KV is one stored object.
type KV struct {
	Key         string
	Value       []byte
	ModRevision int64
	// Stale: etcd keeps it encrypted otherwise than the configuration would now write it (an
	// old key, another provider), so an update writes it even when nothing else changed:
	// rewriting every object moves them all to the current key.
	Stale bool
}

// Get reads key. rev 0 reads the latest.
func (s *Store) Get(ctx context.Context, key string, rev int64) (*KV, int64, error) {
	ctx, span := s.startSpan(ctx, "Get etcd3", key)
	start := time.Now()
	r0, r1, err := s.get(ctx, key, rev)
	s.recordRequest("get", key, err, start)
	endSpan(span, "Get", err)
	if err == nil {
		r0.Value, r0.Stale, err = s.fromStorage(ctx, key, r0.Value)
	}
	return r0, r1, err
}

func (s *Store) get(ctx context.Context, key string, rev int64) (*KV, int64, error) {
	if err := s.check(ctx, key); err != nil {
		return nil, 0, err
	}
	var opts []clientv3.OpOption
	if rev > 0 {
		opts = append(opts, clientv3.WithRev(rev))
	}
	resp, err := read(ctx, func(ctx context.Context) (*clientv3.GetResponse, error) { return s.kv.Get(ctx, key, opts...) })
	if err != nil {
		return nil, 0, err
	}
	if len(resp.Kvs) == 0 {
		return nil, resp.Header.Revision, ErrNotFound
	}
	kv := resp.Kvs[0]
	return &KV{Key: string(kv.Key), Value: kv.Value, ModRevision: kv.ModRevision}, resp.Header.Revision, nil
}

// Create writes key only if it does not exist. When etcd lost the answer to a try, the key
// found by the next is this create's if it was created with this value (values hold the
// object's UID, so another create's differs).
func (s *Store) Create(ctx context.Context, key string, value []byte) (int64, error) {
	ctx, span := s.startSpan(ctx, "Create etcd3", key)
	start := time.Now()
	stored, err := s.toStorage(ctx, key, value)
	r0 := int64(0)
	if err == nil {
		r0, err = s.create(ctx, key, stored)
	}
	s.recordRequest("create", key, err, start)
	endSpan(span, "Txn", err)
	return r0, err
}

func (s *Store) create(ctx context.Context, key string, value []byte) (int64, error) {
	if err := s.check(ctx, key); err != nil {
		return 0, err
	}
	return write(ctx, func(ctx context.Context) clientv3.Txn {
		return s.kv.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", 0)).
			Then(clientv3.OpPut(key, string(value))).Else(clientv3.OpGet(key))
	}, func(resp *clientv3.TxnResponse, lost bool) (int64, error) {
		if resp.Succeeded {
			return resp.Header.Revision, nil
		}
		if kv := current(resp); lost && kv != nil {
			created := kv.Value
			if kv.CreateRevision != kv.ModRevision { // changed since: read it as it was created
				first, _, err := s.get(ctx, key, kv.CreateRevision)
				if err != nil {
					return 0, fmt.Errorf("%w: %v", ErrOutcomeUnknown, err)
				}
				created = first.Value
			}
			if bytes.Equal(created, value) {
				return kv.CreateRevision, nil
			}
		}
		return 0, ErrAlreadyExists
	})
}

// Update writes key only if its mod revision is still expected. When etcd lost the answer to
// a try, a failed condition may be that try's write: it was if the key's first change after
// expected wrote this value.
func (s *Store) Update(ctx context.Context, key string, value []byte, expected int64) (int64, error) {
	ctx, span := s.startSpan(ctx, "GuaranteedUpdate etcd3", key)
	start := time.Now()
	stored, err := s.toStorage(ctx, key, value)
	r0 := int64(0)
	if err == nil {
		r0, err = s.update(ctx, key, stored, expected)
	}
	s.recordRequest("update", key, err, start)
	endSpan(span, "Txn", err)
	return r0, err
}

func (s *Store) update(ctx context.Context, key string, value []byte, expected int64) (int64, error) {
	if err := s.check(ctx, key); err != nil {
		return 0, err
	}
	return write(ctx, func(ctx context.Context) clientv3.Txn {
		return s.kv.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", expected)).
			Then(clientv3.OpPut(key, string(value))).Else(clientv3.OpGet(key))
	}, s.settleConditional(ctx, key, expected, value))
}

// Delete removes key if its mod revision is still expected (0: whatever it is). When etcd lost
// the answer to a try, a failed condition may be that try's delete: it was if the key's first
// change after expected deleted it.
func (s *Store) Delete(ctx context.Context, key string, expected int64) (int64, error) {
	ctx, span := s.startSpan(ctx, "Delete etcd3", key)
	start := time.Now()
	r0, err := s.delete(ctx, key, expected)
	s.recordRequest("delete", key, err, start)
	endSpan(span, "Txn", err)
	return r0, err
}

func (s *Store) delete(ctx context.Context, key string, expected int64) (int64, error) {
	if err := s.check(ctx, key); err != nil {
		return 0, err
	}
	cmp := clientv3.Compare(clientv3.ModRevision(key), ">", 0)
	if expected > 0 {
		cmp = clientv3.Compare(clientv3.ModRevision(key), "=", expected)
	}
	return write(ctx, func(ctx context.Context) clientv3.Txn {
		return s.kv.Txn(ctx).If(cmp).Then(clientv3.OpDelete(key)).Else(clientv3.OpGet(key))
	}, s.settleConditional(ctx, key, expected, nil))
}

// settleConditional answers a write conditional on key's mod revision being expected; value
// is what it put (nil: a delete).
func (s *Store) settleConditional(ctx context.Context, key string, expected int64, value []byte) func(*clientv3.TxnResponse, bool) (int64, error) {
	return func(resp *clientv3.TxnResponse, lost bool) (int64, error) {
		if resp.Succeeded {
			return resp.Header.Revision, nil
		}
		kv := current(resp)
		if lost {
			if value == nil && expected == 0 && kv == nil {
				return resp.Header.Revision, nil // an unconditional delete: the key is gone
			}
			if expected > 0 {
				rev, ours, err := s.firstChangeAfter(ctx, key, expected, value)
				if err != nil {
					return 0, err
				}
				if ours {
					return rev, nil
				}
			}
		}
		if kv == nil {
			return 0, ErrNotFound
		}
		return 0, ErrConflict
	}
}

// firstChangeAfter reads key's first change after revision rev from etcd's history, and
// reports whether it put value (nil: deleted the key), with its revision.
func (s *Store) firstChangeAfter(ctx context.Context, key string, rev int64, value []byte) (int64, bool, error) {
	r := newRetrier(ctx)
	for {
		wctx, cancel := context.WithDeadline(ctx, r.until)
		var err error
		for resp := range s.watcher.Watch(wctx, key, clientv3.WithRev(rev+1)) {
			if err = resp.Err(); err != nil {
				break
			}
			if len(resp.Events) > 0 {
				cancel()
				ev := resp.Events[0]
				if value == nil {
					return ev.Kv.ModRevision, ev.Type == mvccpb.DELETE, nil
				}
				return ev.Kv.ModRevision, ev.Type == mvccpb.PUT && bytes.Equal(ev.Kv.Value, value), nil
			}
		}
		cancel()
		if err == nil {
			err = wctx.Err()
		}
		if errors.Is(err, rpctypes.ErrCompacted) || !r.again(err) {
			return 0, false, fmt.Errorf("%w: %v", ErrOutcomeUnknown, err)
		}
	}
}

// current is the key a failed conditional write read instead (nil: there is none).
func current(resp *clientv3.TxnResponse) *mvccpb.KeyValue {
	if len(resp.Responses) == 0 {
		return nil
	}
	if kvs := resp.Responses[0].GetResponseRange().GetKvs(); len(kvs) > 0 {
		return kvs[0]
	}
	return nil
}

// ListResult is one page of a list.
type ListResult struct {
	KVs      []*KV
	Revision int64
	// More is true when keys after the last returned remain; Remaining counts them.
	More      bool
	Remaining int64
}

// List reads keys under prefix at revision rev (0: latest), starting after startKey (exclusive
// when given), at most limit keys (0: all). Pages of one list use the same revision, so they
// form a consistent snapshot.
func (s *Store) List(ctx context.Context, prefix string, rev int64, startKey string, limit int64) (*ListResult, error) {
	ctx, span := s.startSpan(ctx, "List(recursive=true) etcd3", prefix)
	start := time.Now()
	res, err := s.list(ctx, prefix, rev, startKey, limit)
	s.recordRequest("list", prefix, err, start)
	endSpan(span, "List", err)
	return res, err
}

func (s *Store) list(ctx context.Context, prefix string, rev int64, startKey string, limit int64) (*ListResult, error) {
	if err := s.check(ctx, prefix); err != nil {
		return nil, err
	}
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	from := prefix
	if startKey != "" {
		from = startKey + "\x00"
	}
	opts := []clientv3.OpOption{clientv3.WithRange(clientv3.GetPrefixRangeEnd(prefix))}
	if rev > 0 {
		opts = append(opts, clientv3.WithRev(rev))
	}
	if limit > 0 {
		opts = append(opts, clientv3.WithLimit(limit))
	}
	resp, err := read(ctx, func(ctx context.Context) (*clientv3.GetResponse, error) { return s.kv.Get(ctx, from, opts...) })
	if err != nil {
		return nil, err
	}
	out := &ListResult{Revision: resp.Header.Revision, More: resp.More}
	if rev > 0 {
		out.Revision = rev
	}
	t := s.transformer(prefix) // one resource's keys
	for _, kv := range resp.Kvs {
		data, stale, err := fromStorage(ctx, t, s.prefix+string(kv.Key), kv.Value)
		if err != nil {
			return nil, err
		}
		out.KVs = append(out.KVs, &KV{Key: string(kv.Key), Value: data, ModRevision: kv.ModRevision, Stale: stale})
	}
	if resp.More {
		out.Remaining = resp.Count - int64(len(resp.Kvs))
	}
	return out, nil
}

// EventType is a watch event's kind.
type EventType int

// Watch event types.
const (
	Put EventType = iota
	Deleted
	// Progress carries no change: etcd's revision reached ModRevision (progress notify).
	Progress
)

// Event is one change under a watched prefix.
type Event struct {
	Type        EventType
	Key         string
	Value       []byte // for Deleted: the last value before deletion
	PrevValue   []byte // for Put: the value before this change, if any
	ModRevision int64
	Created     bool
	Err         error // terminal: the watch ended (ErrCompacted or another failure)
}

// Watch streams changes under prefix after revision rev (0: from now). The channel closes
// when ctx is done or after an Err event.
func (s *Store) Watch(ctx context.Context, prefix string, rev int64) <-chan Event {
	return s.watch(ctx, prefix, rev, nil)
}

// WatchNow watches prefix from the present and returns once etcd has set the watch up, with
// a revision it starts after: a list at that revision and the watch's events together miss
// no change. Events at or before the revision may come too (a write between the watch's
// setup and etcd's answer) and are to be skipped. Unlike a watch from a past revision, it is
// caught up at once, so a progress request on its stream is answered at once (etcd syncs a
// watch behind its revision only every 100 ms, and ignores progress requests on a stream
// with such a watch on it).
func (s *Store) WatchNow(ctx context.Context, prefix string) (int64, <-chan Event, error) {
	created := make(chan int64) // unbuffered: the setup's revision comes before any event
	out := s.watch(ctx, prefix, 0, created)
	select {
	case rev := <-created:
		return rev, out, nil
	case ev, ok := <-out: // the watch failed before etcd set it up
		if !ok {
			return 0, nil, ctx.Err()
		}
		return 0, nil, ev.Err
	}
}

// WatchStream gives the watches and progress requests made with the returned context an etcd
// watch stream (a gRPC stream) of their own, named name, replacing ctx's outgoing metadata,
// which names the stream. etcd answers a progress request only once every watch on its
// stream has caught up, so a watch cache, which asks for progress to serve consistent reads,
// keeps its watch away from the watches that start in the past.
func WatchStream(ctx context.Context, name string) context.Context {
	return metadata.NewOutgoingContext(ctx, metadata.Pairs("apichain-watch-stream", name))
}

// watch streams changes under prefix after rev; with created, it asks etcd to confirm the
// watch's setup and sends etcd's revision at that moment on created before any event.
func (s *Store) watch(ctx context.Context, prefix string, rev int64, created chan<- int64) <-chan Event {
	out := make(chan Event, 100)
	if !s.isOpen() { // set up once the store opens, without holding the caller up
		go func() {
			if err := s.WaitOpen(ctx); err != nil {
				out <- Event{Err: err}
				close(out)
				return
			}
			for ev := range s.Gated(nil).watch(ctx, prefix, rev, created) {
				if !send(ctx, out, ev) {
					break
				}
			}
			close(out)
		}()
		return out
	}
	if err := s.check(ctx, prefix); err != nil {
		out <- Event{Err: err}
		close(out)
		return out
	}
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	opts := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithPrevKV(), clientv3.WithProgressNotify()}
	if rev > 0 {
		opts = append(opts, clientv3.WithRev(rev+1))
	}
	if created != nil {
		opts = append(opts, clientv3.WithCreatedNotify())
	}
	t := s.transformer(prefix) // one resource's keys
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	wch := s.watcher.Watch(wctx, prefix, opts...)
	go func() {
		defer close(out)
		defer cancel()
		for resp := range wch {
			if err := resp.Err(); err != nil {
				if resp.CompactRevision > 0 || errors.Is(err, rpctypes.ErrCompacted) {
					err = ErrCompacted
				}
				send(ctx, out, Event{Err: err})
				return
			}
			if resp.Created {
				if created != nil {
					select {
					case created <- resp.Header.Revision:
					case <-ctx.Done():
						return
					}
					created = nil
				}
				continue
			}
			if resp.IsProgressNotify() {
				if !send(ctx, out, Event{Type: Progress, ModRevision: resp.Header.Revision}) {
					return
				}
				continue
			}
			for _, ev := range resp.Events {
				e := Event{Key: string(ev.Kv.Key), ModRevision: ev.Kv.ModRevision, Value: ev.Kv.Value, Created: ev.IsCreate()}
				if ev.PrevKv != nil {
					e.PrevValue = ev.PrevKv.Value
				}
				if t != nil {
					if err := fromStorageEvent(ctx, t, s.prefix+e.Key, &e); err != nil {
						send(ctx, out, Event{Err: err})
						return
					}
				}
				if ev.Type == mvccpb.DELETE {
					e.Type = Deleted
					e.Value, e.PrevValue = e.PrevValue, nil
				}
				if !send(ctx, out, e) {
					return
				}
			}
		}
		if ctx.Err() == nil {
			send(ctx, out, Event{Err: errors.New("etcd watch closed")})
		}
	}()
	return out
}

// fromStorageEvent turns an event's values back into what was written (key: its key in etcd).
func fromStorageEvent(ctx context.Context, t storagevalue.Transformer, key string, e *Event) (err error) {
	if e.Value, _, err = fromStorage(ctx, t, key, e.Value); err != nil {
		return err
	}
	e.PrevValue, _, err = fromStorage(ctx, t, key, e.PrevValue)
	return err
}

func send(ctx context.Context, ch chan<- Event, e Event) bool {
	select {
	case ch <- e:
		return true
	case <-ctx.Done():
		return false
	}
}

// CurrentRevision is etcd's current revision.
func (s *Store) CurrentRevision(ctx context.Context) (int64, error) {
	if err := s.WaitOpen(ctx); err != nil {
		return 0, err
	}
	resp, err := read(ctx, func(ctx context.Context) (*clientv3.GetResponse, error) {
		return s.kv.Get(ctx, "/__revision_probe", clientv3.WithCountOnly())
	})
	if err != nil {
		return 0, err
	}
	return resp.Header.Revision, nil
}

func mapErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, rpctypes.ErrCompacted) {
		return ErrCompacted
	}
	if errors.Is(err, rpctypes.ErrFutureRev) {
		return ErrFutureRV
	}
	return fmt.Errorf("etcd: %w", err)
}

// RequestProgress asks etcd to send a Progress event on the open watches of ctx's stream (see
// WatchStream), so a watcher learns it is current even when nothing under its prefix changed.
func (s *Store) RequestProgress(ctx context.Context) error {
	if err := s.WaitOpen(ctx); err != nil {
		return err
	}
	return mapErr(s.watcher.RequestProgress(clientv3.WithRequireLeader(ctx)))
}
