package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/apichain/apichain/pkg/storage"
	clientv3 "go.etcd.io/etcd/client/v3"
	storagevalue "k8s.io/apiserver/pkg/storage/value"
)

// apichain before 0.2 kept objects under its own layout: /<group>/<resource>/ ("core" for the
// legacy group), JSON. MigrateLayout moves them to kube's (layout.go), once.

// LayoutRecordKey (under the etcd prefix) records the migrations to kube's layout that ran.
const LayoutRecordKey = "/apichain/storage-layout"

// legacyMarker is the key prefix of an earlier apichain's legacy group, which every etcd it
// wrote has (its namespaces) until a migration moved them.
const legacyMarker = "/core/"

// ErrLegacyLayout says etcd holds objects in an earlier apichain's layout.
var ErrLegacyLayout = errors.New("etcd holds objects in the storage layout of an apichain before kube's layout (keys under <prefix>/core/)")

// legacyPrefix is where an earlier apichain kept r's objects.
func legacyPrefix(r *Resource) string {
	g := r.StoredGroupResource().Group
	if g == "" {
		g = "core"
	}
	return "/" + g + "/" + r.Name + "/"
}

// LayoutRun is one run of the migration, as recorded.
type LayoutRun struct {
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished,omitzero"`
	// Moved counts the objects moved (or rewritten in place) per resource.
	Moved map[string]int `json:"moved,omitempty"`
	// Kept names the objects left where they were because kube's key was taken.
	Kept []string `json:"kept,omitempty"`
}

// LayoutRecord is what LayoutRecordKey holds.
type LayoutRecord struct {
	Layout string      `json:"layout"`
	Runs   []LayoutRun `json:"runs"`
}

// Migration moves an earlier apichain's objects to kube's layout and encoding.
type Migration struct {
	Client *clientv3.Client
	// Prefix is the etcd prefix (--etcd-prefix).
	Prefix string
	// Resources are every stored resource of every service (custom resources need none:
	// their keys did not change).
	Resources []*Resource
	// Values are the encryption transformers (nil: values are kept as they are).
	Values storage.Transformers
	// MediaType objects are written in (--storage-media-type).
	MediaType string
	// StopAfter, when positive, stops the run after that many objects, as a crash would
	// (tests of interruption).
	StopAfter int
}

// NeedsLayoutMigration reports whether etcd under prefix holds an earlier apichain's objects:
// its legacy group's keys, or a migration's record whose last run did not finish.
func NeedsLayoutMigration(ctx context.Context, c *clientv3.Client, prefix string) (bool, error) {
	resp, err := c.Txn(ctx).Then(
		clientv3.OpGet(prefix+legacyMarker, clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithLimit(1)),
		clientv3.OpGet(prefix+LayoutRecordKey)).Commit()
	if err != nil {
		return false, err
	}
	if len(resp.Responses[0].GetResponseRange().GetKvs()) > 0 {
		return true, nil
	}
	if kvs := resp.Responses[1].GetResponseRange().GetKvs(); len(kvs) > 0 {
		var rec LayoutRecord
		if err := json.Unmarshal(kvs[0].Value, &rec); err != nil {
			return false, fmt.Errorf("the record at %s: %w", prefix+LayoutRecordKey, err)
		}
		return len(rec.Runs) > 0 && rec.Runs[len(rec.Runs)-1].Finished.IsZero(), nil
	}
	return false, nil
}

// Run moves every object under an earlier layout's prefix to kube's key, re-encoded (and
// re-encrypted: the key is the encryption's authenticated data), each in one etcd
// transaction that also deletes the old key: interrupted anywhere, nothing is lost or doubled,
// and running again finishes the work. A run is recorded under LayoutRecordKey.
func (m *Migration) Run(ctx context.Context) (*LayoutRun, error) {
	h := NewHandler(nil, NewSet(), nil, nil)
	if m.MediaType != "" {
		if err := h.SetStorageMediaType(m.MediaType); err != nil {
			return nil, err
		}
	}
	rec, err := m.loadRecord(ctx)
	if err != nil {
		return nil, err
	}
	rec.Runs = append(rec.Runs, LayoutRun{Started: time.Now().UTC(), Moved: map[string]int{}})
	run := &rec.Runs[len(rec.Runs)-1]
	if err := m.saveRecord(ctx, rec); err != nil { // a run that crashes is on record too
		return nil, err
	}
	seen := map[string]bool{}
	done := 0
	for _, r := range m.Resources {
		from := legacyPrefix(r)
		if !r.stored() || seen[from] || r.ConvertVersion != nil {
			continue
		}
		seen[from] = true
		if err := m.moveAll(ctx, h, r, from, rec, &done); err != nil {
			return run, fmt.Errorf("migrating %s: %w", from, err)
		}
	}
	run.Finished = time.Now().UTC()
	return run, m.saveRecord(ctx, rec)
}

// errStopped ends a run early (Migration.StopAfter).
var errStopped = errors.New("stopped on purpose")

// moveAll moves the objects under one old prefix, a page at a time, recording the run's
// progress after each page.
func (m *Migration) moveAll(ctx context.Context, h *Handler, r *Resource, from string, rec *LayoutRecord, done *int) error {
	run := &rec.Runs[len(rec.Runs)-1]
	gr := r.StoredGroupResource().String()
	start := m.Prefix + from
	end := clientv3.GetPrefixRangeEnd(start)
	for {
		resp, err := m.Client.Get(ctx, start, clientv3.WithRange(end), clientv3.WithLimit(500))
		if err != nil {
			return err
		}
		for _, kv := range resp.Kvs {
			if m.StopAfter > 0 && *done >= m.StopAfter {
				return errStopped
			}
			ok, err := m.move(ctx, h, r, from, kv.Key, kv.Value, kv.ModRevision)
			if err != nil {
				return err
			}
			if ok {
				run.Moved[gr]++
				*done++
			} else {
				run.Kept = append(run.Kept, string(kv.Key))
			}
		}
		if len(resp.Kvs) > 0 {
			if err := m.saveRecord(ctx, rec); err != nil {
				return err
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return nil
		}
		start = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// move moves one object; false when kube's key already holds another, which is then left
// alone (and so is the old one, for the operator to look at).
func (m *Migration) move(ctx context.Context, h *Handler, r *Resource, from string, oldKey, value []byte, rev int64) (bool, error) {
	rel := string(oldKey[len(m.Prefix)+len(from):]) // [<namespace>/]<name>
	newKey := m.Prefix + resourcePrefix(r) + rel
	var t storagevalue.Transformer
	if m.Values != nil {
		t = m.Values.For(r.StoredGroupResource())
	}
	data := value
	if t != nil {
		var err error
		if data, _, err = t.TransformFromStorage(ctx, value, storagevalue.DefaultContext(string(oldKey))); err != nil {
			return false, fmt.Errorf("decrypting %s: %w", oldKey, err)
		}
	}
	obj, err := decodeStoredForm(r, data)
	if err != nil {
		return false, fmt.Errorf("decoding %s: %w", oldKey, err)
	}
	out, err := h.encodeStored(r, obj)
	if err != nil {
		return false, fmt.Errorf("encoding %s: %w", oldKey, err)
	}
	if t != nil {
		if out, err = t.TransformToStorage(ctx, out, storagevalue.DefaultContext(newKey)); err != nil {
			return false, fmt.Errorf("encrypting %s: %w", newKey, err)
		}
	}
	if newKey == string(oldKey) {
		if bytes.Equal(out, value) {
			return true, nil
		}
		_, err := m.Client.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(newKey), "=", rev)).
			Then(clientv3.OpPut(newKey, string(out))).Commit()
		return err == nil, err
	}
	resp, err := m.Client.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(string(oldKey)), "=", rev), clientv3.Compare(clientv3.CreateRevision(newKey), "=", 0)).
		Then(clientv3.OpPut(newKey, string(out)), clientv3.OpDelete(string(oldKey))).Commit()
	if err != nil {
		return false, err
	}
	return resp.Succeeded, nil
}

// loadRecord reads the record of migrations (an empty one when there is none).
func (m *Migration) loadRecord(ctx context.Context) (*LayoutRecord, error) {
	key := m.Prefix + LayoutRecordKey
	rec := &LayoutRecord{Layout: "kube-apiserver 1.37"}
	resp, err := m.Client.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	if len(resp.Kvs) > 0 {
		if err := json.Unmarshal(resp.Kvs[0].Value, rec); err != nil {
			return nil, fmt.Errorf("the record at %s: %w", key, err)
		}
	}
	return rec, nil
}

// saveRecord writes the record of migrations.
func (m *Migration) saveRecord(ctx context.Context, rec *LayoutRecord) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	_, err = m.Client.Put(ctx, m.Prefix+LayoutRecordKey, string(data))
	return err
}

// Summary is one line per resource moved, in order.
func (run *LayoutRun) Summary() []string {
	var out []string
	for gr, n := range run.Moved {
		out = append(out, fmt.Sprintf("%s: %d", gr, n))
	}
	sort.Strings(out)
	return out
}
