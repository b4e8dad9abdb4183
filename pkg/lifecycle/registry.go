package lifecycle

import (
	"sort"
	"sync"
	"time"

	lifecyclev1 "github.com/apichain/apichain/gen/apichain/lifecycle/v1"
)

// Source says where the registry's states come from.
type Source string

const (
	// SourceNATS: states are read from the NATS lifecycle bucket.
	SourceNATS Source = "nats"
	// SourceGRPC: NATS is unreachable; states are read from instances over gRPC.
	SourceGRPC Source = "grpc-health"
)

// Registry is the gateway's view of every instance. An entry not refreshed within the TTL
// is dropped, so an instance that dies without a goodbye disappears.
type Registry struct {
	mu        sync.Mutex
	ttl       time.Duration
	now       func() time.Time
	entries   map[string]entry
	source    Source
	listeners []func()
	changed   chan struct{} // closed and replaced on every change
	synced    chan struct{}
	syncOnce  sync.Once
}

type entry struct {
	state *lifecyclev1.InstanceState
	seen  time.Time
	via   Source
}

// NewRegistry makes an empty registry.
func NewRegistry(ttl time.Duration) *Registry {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	return &Registry{ttl: ttl, now: time.Now, entries: map[string]entry{}, source: SourceNATS,
		changed: make(chan struct{}), synced: make(chan struct{})}
}

// MarkSynced records that the registry holds a complete picture once (NATS initial values
// delivered, or a full gRPC fallback round done).
func (r *Registry) MarkSynced() { r.syncOnce.Do(func() { close(r.synced) }) }

// Synced is closed after the first complete picture.
func (r *Registry) Synced() <-chan struct{} { return r.synced }

// OnChange registers f to run after entries change.
func (r *Registry) OnChange(f func()) {
	r.mu.Lock()
	r.listeners = append(r.listeners, f)
	r.mu.Unlock()
}

// Changed is closed at the next change of the entries.
func (r *Registry) Changed() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed
}

func (r *Registry) notify() {
	r.mu.Lock()
	ls := append([]func(){}, r.listeners...)
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
	for _, f := range ls {
		f()
	}
}

// Upsert records an instance's state as seen now.
func (r *Registry) Upsert(st *lifecyclev1.InstanceState, via Source) {
	r.mu.Lock()
	r.entries[Key(st.GetService(), st.GetInstanceId())] = entry{state: st, seen: r.now(), via: via}
	r.mu.Unlock()
	r.notify()
}

// Remove forgets an instance (it said goodbye).
func (r *Registry) Remove(key string) {
	r.mu.Lock()
	_, ok := r.entries[key]
	delete(r.entries, key)
	r.mu.Unlock()
	if ok {
		r.notify()
	}
}

// SetSource records where states come from now.
func (r *Registry) SetSource(s Source) {
	r.mu.Lock()
	r.source = s
	r.mu.Unlock()
}

// Source says where states come from now.
func (r *Registry) Source() Source {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.source
}

// Instances returns the live instances sorted by service and instance id, dropping expired ones.
func (r *Registry) Instances() []*lifecyclev1.InstanceState {
	r.mu.Lock()
	now := r.now()
	var out []*lifecyclev1.InstanceState
	expired := false
	for k, e := range r.entries {
		if now.Sub(e.seen) > r.ttl {
			delete(r.entries, k)
			expired = true
			continue
		}
		out = append(out, e.state)
	}
	r.mu.Unlock()
	if expired {
		r.notify()
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].GetService() != out[j].GetService() {
			return out[i].GetService() < out[j].GetService()
		}
		return out[i].GetInstanceId() < out[j].GetInstanceId()
	})
	return out
}

// Service returns the live instances of one service.
func (r *Registry) Service(name string) []*lifecyclev1.InstanceState {
	var out []*lifecyclev1.InstanceState
	for _, st := range r.Instances() {
		if st.GetService() == name {
			out = append(out, st)
		}
	}
	return out
}

// Serving reports whether an instance serves its API, ready or not yet: it has installed its
// routes (MuxAndDiscoveryComplete) and is not stopping. Another backend's reads may go to
// it while its own start finishes, as kube-apiserver's loopback clients read from the server
// before it is ready.
func Serving(st *lifecyclev1.InstanceState) bool {
	if st.GetState() < lifecyclev1.State_STATE_STARTING || st.GetState() >= lifecyclev1.State_STATE_STOPPING {
		return false
	}
	for _, s := range st.GetSignals() {
		if s.GetName() == "MuxAndDiscoveryComplete" {
			return true
		}
	}
	return false
}

// Routable reports whether the gateway may send requests to an instance.
func Routable(st *lifecyclev1.InstanceState) bool {
	return st.GetReady() && st.GetState() < lifecyclev1.State_STATE_STOPPING
}
