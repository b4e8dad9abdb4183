package proxy

import (
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/routing"
	"github.com/prometheus/client_golang/prometheus"
)

// Sizes of a shared watch's buffers.
const (
	// hubHistory is how many recent events a shared watch keeps, so that a client watching
	// from a version it has already passed (an informer's list was a little older) still
	// joins it.
	hubHistory = 1024
	// hubClientBuffer is how many events wait for one client; a client that falls further
	// behind is ended, as kube ends a watcher its watch cache cannot feed, and watches again.
	hubClientBuffer = 256
)

// WatchHub shares one backend watch among the clients that watch the same thing: as kube's
// watch cache feeds every watcher of a resource from one etcd watch, the backend then sends
// each event to the gateway once rather than once per client, and the gateway writes it to
// each of them. A watch is shared when it starts from a specific resourceVersion and its
// events do not depend on the watcher: no initial events, no Table or metadata-only output
// (the first Table event carries the columns), not a subresource, not proxied to an
// aggregated API server (which sees the caller). A client joins a shared watch when its
// version is not older than the watch's start nor than the events it has dropped, and it gets
// exactly the events after its version: the backend tags each with its revision.
type WatchHub struct {
	rt *routing.Router
	// open opens a backend watch and reads its first message.
	open func(ctx context.Context, gv string, req *resourcev1.WatchRequest) (watchStream, error)

	mu     sync.Mutex
	shared map[hubKey]*sharedWatch
}

// NewWatchHub shares watches routed by rt. A backend watch lasts as long as it has clients.
func NewWatchHub(rt *routing.Router) *WatchHub {
	open := func(ctx context.Context, gv string, req *resourcev1.WatchRequest) (watchStream, error) {
		s, err := routing.WatchThrough(ctx, rt, gv, req)
		if err != nil {
			return nil, err // not a nil *routing.Watch in the interface
		}
		return s, nil
	}
	return &WatchHub{rt: rt, open: open, shared: map[hubKey]*sharedWatch{}}
}

// Register registers apichain_gateway_shared_watches (backend watches the hub holds) and
// apichain_gateway_shared_watch_clients (the client watches they feed).
func (h *WatchHub) Register(reg prometheus.Registerer) {
	count := func(clients bool) float64 {
		h.mu.Lock()
		defer h.mu.Unlock()
		n := 0
		for _, sw := range h.shared {
			if !clients {
				n++
				continue
			}
			sw.mu.Lock()
			n += len(sw.clients)
			sw.mu.Unlock()
		}
		return float64(n)
	}
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "apichain_gateway_shared_watches",
			Help: "Backend watches the gateway shares among clients that watch the same thing."},
			func() float64 { return count(false) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "apichain_gateway_shared_watch_clients",
			Help: "Client watches fed by shared backend watches."},
			func() float64 { return count(true) }))
}

// hubKey is what makes two watches the same, apart from their version.
type hubKey struct {
	group, version, resource, namespace, name string
	accept                                    string
	pretty, bookmarks                         bool
	labels, fields                            string
}

// share reports whether req can be shared, with its key and the version it starts after.
func (h *WatchHub) share(gv string, req *resourcev1.WatchRequest) (hubKey, int64, bool) {
	if req.GetSendInitialEvents() || req.GetRef().GetSubresource() != "" ||
		req.GetOptions().GetResourceVersionMatch() != "" {
		return hubKey{}, 0, false
	}
	rv, err := strconv.ParseInt(req.GetOptions().GetResourceVersion(), 10, 64)
	if err != nil || rv <= 0 {
		return hubKey{}, 0, false // "" and "0" replay the current objects for each watcher
	}
	if accept := req.GetEncoding().GetAccept(); strings.Contains(accept, "as=") || h.rt.Proxied(gv) {
		return hubKey{}, 0, false
	}
	ref, o := req.GetRef(), req.GetOptions()
	return hubKey{group: ref.GetGroup(), version: ref.GetVersion(), resource: ref.GetResource(),
		namespace: ref.GetNamespace(), name: ref.GetName(), accept: req.GetEncoding().GetAccept(),
		pretty: req.GetEncoding().GetPretty(), bookmarks: req.GetAllowWatchBookmarks(),
		labels: o.GetLabelSelector(), fields: o.GetFieldSelector()}, rv, true
}

// watchStream is a watch's events: the first message (empty type) says it is established.
type watchStream interface {
	Recv() (*resourcev1.WatchResponse, error)
	// Warnings are the backend's warnings about the watch (a deprecated kind's), sent as it
	// opened.
	Warnings() []string
}

// Watch opens req on group/version gv through the chain for a client whose request ends with
// ctx: a share of a backend watch when it can be shared, else a watch of its own.
func (h *WatchHub) Watch(ctx context.Context, gv string, req *resourcev1.WatchRequest) (watchStream, error) {
	key, from, ok := h.share(gv, req)
	if !ok {
		return h.open(ctx, gv, req)
	}
	client, timed := ctx, ctx
	if t := req.GetTimeoutSeconds(); t > 0 {
		// The backend watch has no timeout: each client's ends on its own.
		var cancel context.CancelFunc
		timed, cancel = context.WithTimeout(ctx, time.Duration(t)*time.Second)
		context.AfterFunc(client, cancel)
	}
	for {
		h.mu.Lock()
		sw := h.shared[key]
		if sw == nil {
			sw = &sharedWatch{hub: h, key: key, start: from, ready: make(chan struct{}), clients: map[*hubClient]struct{}{}}
			h.shared[key] = sw
			h.mu.Unlock()
			c, err := h.start(sw, gv, req, client, timed)
			if err != nil {
				return nil, err
			}
			return c, nil
		}
		h.mu.Unlock()
		if from < sw.start {
			return h.open(client, gv, req) // older than the shared watch: a watch of its own
		}
		select {
		case <-sw.ready:
		case <-client.Done():
			return nil, client.Err()
		}
		if sw.failed {
			return h.open(client, gv, req) // the first client got the backend's answer; this one asks again
		}
		if c := sw.join(client, timed, from); c != nil {
			return c, nil
		}
		if !sw.ended() {
			return h.open(client, gv, req) // its history no longer reaches back to from
		}
		// It ended as this client came: the next attempt starts another.
	}
}

// start opens sw's backend watch from sw.start, for as long as it has clients, with the
// client that asked for it as the first: joined before any event arrives, so it sees even a
// watch that the backend ends at once (a 410 ERROR).
func (h *WatchHub) start(sw *sharedWatch, gv string, req *resourcev1.WatchRequest, client, timed context.Context) (*hubClient, error) {
	ctx, cancel := context.WithCancel(context.Background()) // as the gateway, not the first client
	up := &resourcev1.WatchRequest{Ref: req.GetRef(), Encoding: req.GetEncoding(), Options: req.GetOptions(),
		AllowWatchBookmarks: req.GetAllowWatchBookmarks()} // no timeout: each client has its own
	in, err := h.open(ctx, gv, up)
	if err == nil {
		sw.first, err = in.Recv()
	}
	if err != nil {
		cancel()
		h.mu.Lock()
		if h.shared[sw.key] == sw {
			delete(h.shared, sw.key)
		}
		h.mu.Unlock()
		sw.failed = true
		close(sw.ready)
		return nil, err
	}
	sw.cancel, sw.warnings = cancel, in.Warnings()
	c := sw.join(client, timed, sw.start) // sw cannot have ended: nothing has run yet
	close(sw.ready)
	go sw.run(in)
	return c, nil
}

// sharedWatch is one backend watch and the clients it feeds.
type sharedWatch struct {
	hub   *WatchHub
	key   hubKey
	start int64 // the version the backend watch started after

	ready    chan struct{} // closed once the backend answered
	failed   bool          // the backend refused it: set before ready is closed
	first    *resourcev1.WatchResponse
	warnings []string
	cancel   context.CancelFunc

	mu      sync.Mutex
	history []*resourcev1.WatchResponse
	dropped int64 // the highest revision that left history
	// untagged: the backend sent an event without its revision (a backend older than the
	// gateway), so only clients from the watch's own start may join.
	untagged bool
	clients  map[*hubClient]struct{}
	done     bool
	err      error // why the backend watch ended: io.EOF for a clean end
}

func (sw *sharedWatch) ended() bool {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	return sw.done
}

// join adds a client watching from version from, with the events after it it has missed; nil
// when sw cannot serve it (ended, or its history no longer reaches back).
func (sw *sharedWatch) join(client, ctx context.Context, from int64) *hubClient {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.done || from < sw.dropped || sw.untagged && from != sw.start {
		return nil
	}
	c := &hubClient{sw: sw, client: client, ctx: ctx, from: from, first: sw.first, ch: make(chan *resourcev1.WatchResponse, hubClientBuffer+len(sw.history))}
	for _, ev := range sw.history {
		if c.wants(ev) {
			c.ch <- ev
		}
	}
	sw.clients[c] = struct{}{}
	c.stop = context.AfterFunc(ctx, func() { sw.leave(c) })
	return c
}

// leave removes c; the backend watch ends with its last client.
func (sw *sharedWatch) leave(c *hubClient) {
	h := sw.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if _, ok := sw.clients[c]; !ok {
		return
	}
	delete(sw.clients, c)
	if len(sw.clients) == 0 && !sw.done {
		sw.endLocked(io.EOF)
		sw.cancel()
	}
}

// endLocked ends sw and its clients (with sw.mu and the hub's lock held).
func (sw *sharedWatch) endLocked(err error) {
	sw.done, sw.err = true, err
	if sw.hub.shared[sw.key] == sw {
		delete(sw.hub.shared, sw.key)
	}
	for c := range sw.clients {
		close(c.ch)
		delete(sw.clients, c)
	}
	sw.history = nil
}

// run feeds the backend's events to the clients until the backend watch ends.
func (sw *sharedWatch) run(in watchStream) {
	defer sw.cancel()
	for {
		ev, err := in.Recv()
		if err != nil {
			sw.hub.mu.Lock()
			sw.mu.Lock()
			if !sw.done {
				sw.endLocked(err)
			}
			sw.mu.Unlock()
			sw.hub.mu.Unlock()
			return
		}
		sw.mu.Lock()
		if sw.done {
			sw.mu.Unlock()
			return
		}
		if len(sw.history) == hubHistory {
			sw.dropped = max(sw.dropped, sw.history[0].GetRevision())
			sw.history[0] = nil
			sw.history = sw.history[1:]
		}
		sw.history = append(sw.history, ev)
		if ev.GetRevision() == 0 && ev.GetType() != "ERROR" {
			sw.untagged = true
		}
		for c := range sw.clients {
			if !c.wants(ev) {
				continue
			}
			select {
			case c.ch <- ev:
			default: // too far behind: it ends, and watches again from where it got to
				close(c.ch)
				delete(sw.clients, c)
			}
		}
		sw.mu.Unlock()
	}
}

// hubClient is one client's share of a watch.
type hubClient struct {
	sw     *sharedWatch
	client context.Context // the client's request
	ctx    context.Context // and its timeout
	from   int64
	first  *resourcev1.WatchResponse
	ch     chan *resourcev1.WatchResponse
	stop   func() bool
}

// wants reports whether ev is after the client's version. An event without a revision (an
// ERROR) goes to every client.
func (c *hubClient) wants(ev *resourcev1.WatchResponse) bool {
	return ev.GetRevision() == 0 || ev.GetRevision() > c.from
}

// Recv is the next event: first the established message, then the events after the client's
// version. io.EOF ends the watch cleanly (the backend ended it, or the client fell behind): the
// client watches again.
func (c *hubClient) Warnings() []string { return c.sw.warnings }

func (c *hubClient) Recv() (*resourcev1.WatchResponse, error) {
	if f := c.first; f != nil {
		c.first = nil
		return f, nil
	}
	select {
	case ev, ok := <-c.ch:
		if ok {
			return ev, nil
		}
		c.stop()
		c.sw.mu.Lock()
		err := c.sw.err
		c.sw.mu.Unlock()
		if err == nil || errors.Is(err, context.Canceled) && c.client.Err() == nil {
			err = io.EOF // ended for this client only, or by the hub: a clean end
		}
		return nil, err
	case <-c.ctx.Done():
		if err := c.client.Err(); err != nil {
			return nil, err
		}
		return nil, io.EOF // its timeoutSeconds passed: a clean end, as the backend's
	}
}
