package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Errors of the store; the registry turns them into kube Status errors.
var (
	ErrNotFound      = errors.New("not found")
	ErrAlreadyExists = errors.New("already exists")
	ErrConflict      = errors.New("the object has been modified")
	ErrCompacted     = errors.New("resource version compacted")
	ErrFutureRV      = errors.New("resource version is in the future")
)

// Store keeps objects as bytes under keys in etcd; an object's resource version is its
// etcd mod revision.
type Store struct {
	client *clientv3.Client
}

// NewStore wraps an etcd client.
func NewStore(c *clientv3.Client) *Store { return &Store{client: c} }

// KV is one stored object.
type KV struct {
	Key         string
	Value       []byte
	ModRevision int64
}

// Get reads key. rev 0 reads the latest.
func (s *Store) Get(ctx context.Context, key string, rev int64) (*KV, int64, error) {
	var opts []clientv3.OpOption
	if rev > 0 {
		opts = append(opts, clientv3.WithRev(rev))
	}
	resp, err := s.client.Get(ctx, key, opts...)
	if err != nil {
		return nil, 0, mapErr(err)
	}
	if len(resp.Kvs) == 0 {
		return nil, resp.Header.Revision, ErrNotFound
	}
	kv := resp.Kvs[0]
	return &KV{Key: string(kv.Key), Value: kv.Value, ModRevision: kv.ModRevision}, resp.Header.Revision, nil
}

// Create writes key only if it does not exist.
func (s *Store) Create(ctx context.Context, key string, value []byte) (int64, error) {
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(value))).
		Commit()
	if err != nil {
		return 0, mapErr(err)
	}
	if !resp.Succeeded {
		return 0, ErrAlreadyExists
	}
	return resp.Header.Revision, nil
}

// Update writes key only if its mod revision is still expected.
func (s *Store) Update(ctx context.Context, key string, value []byte, expected int64) (int64, error) {
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", expected)).
		Then(clientv3.OpPut(key, string(value))).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return 0, mapErr(err)
	}
	if !resp.Succeeded {
		if len(resp.Responses) > 0 && len(resp.Responses[0].GetResponseRange().Kvs) == 0 {
			return 0, ErrNotFound
		}
		return 0, ErrConflict
	}
	return resp.Header.Revision, nil
}

// Delete removes key if its mod revision is still expected (0: whatever it is).
func (s *Store) Delete(ctx context.Context, key string, expected int64) (int64, error) {
	cmp := clientv3.Compare(clientv3.ModRevision(key), ">", 0)
	if expected > 0 {
		cmp = clientv3.Compare(clientv3.ModRevision(key), "=", expected)
	}
	resp, err := s.client.Txn(ctx).If(cmp).Then(clientv3.OpDelete(key)).Else(clientv3.OpGet(key)).Commit()
	if err != nil {
		return 0, mapErr(err)
	}
	if !resp.Succeeded {
		if len(resp.Responses) > 0 && len(resp.Responses[0].GetResponseRange().Kvs) == 0 {
			return 0, ErrNotFound
		}
		return 0, ErrConflict
	}
	return resp.Header.Revision, nil
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
	resp, err := s.client.Get(ctx, from, opts...)
	if err != nil {
		return nil, mapErr(err)
	}
	out := &ListResult{Revision: resp.Header.Revision, More: resp.More}
	if rev > 0 {
		out.Revision = rev
	}
	for _, kv := range resp.Kvs {
		out.KVs = append(out.KVs, &KV{Key: string(kv.Key), Value: kv.Value, ModRevision: kv.ModRevision})
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
	out := make(chan Event, 100)
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	opts := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithPrevKV(), clientv3.WithProgressNotify()}
	if rev > 0 {
		opts = append(opts, clientv3.WithRev(rev+1))
	}
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	wch := s.client.Watch(wctx, prefix, opts...)
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
	resp, err := s.client.Get(ctx, "/registry/__revision_probe", clientv3.WithCountOnly())
	if err != nil {
		return 0, mapErr(err)
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

// RequestProgress asks etcd to send a Progress event on open watches, so a watcher learns it
// is current even when nothing under its prefix changed.
func (s *Store) RequestProgress(ctx context.Context) error {
	return mapErr(s.client.RequestProgress(clientv3.WithRequireLeader(ctx)))
}
