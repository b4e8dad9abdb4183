// Package routing picks the backend instance a request goes to: from the lifecycle state
// of every instance, the first service in chain order that serves the request's
// group/version, one of its ready replicas in turn, and the next replica when one is
// unreachable. It also keeps the gateway's pooled connections to the instances.
package routing

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lifecyclev1 "github.com/apichain/apichain/gen/apichain/lifecycle/v1"
	"github.com/apichain/apichain/pkg/lifecycle"
	"github.com/apichain/apichain/pkg/rpcstatus"
	"github.com/apichain/apichain/pkg/topology"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"
)

// ErrEndOfChain means no delegate serves the request.
var ErrEndOfChain = errors.New("no server in the delegation chain serves this request")

// ErrChainIncomplete means a delegate has not yet installed all its routes, so a miss may be
// temporary (kube answers 503 until MuxAndDiscoveryComplete).
var ErrChainIncomplete = errors.New("the delegation chain is not complete yet")

// Router picks backend instances for a group/version from the lifecycle registry.
type Router struct {
	reg  *lifecycle.Registry
	pool *Pool
	rr   sync.Map // service -> *atomic.Uint64
	// perInstance counts requests each backend instance served (nil: not counted).
	perInstance *prometheus.CounterVec
	// routable says which instances take requests: ready ones (lifecycle.Routable), or for
	// a backend's reads of another's kinds, serving ones (lifecycle.Serving).
	routable func(*lifecyclev1.InstanceState) bool
}

// NewRouter routes by reg's instances over pool's connections, to ready instances.
func NewRouter(reg *lifecycle.Registry, pool *Pool) *Router {
	return &Router{reg: reg, pool: pool, routable: lifecycle.Routable}
}

// NewPeerRouter routes a backend's reads of another service's kinds: to instances that serve,
// ready or not yet, so that services whose readiness waits on their copies of another's kinds
// do not wait for all of its start too (its bootstrap objects reach the copies as they are
// made).
func NewPeerRouter(reg *lifecycle.Registry, pool *Pool) *Router {
	return &Router{reg: reg, pool: pool, routable: lifecycle.Serving}
}

// CountRequests registers apichain_gateway_backend_requests_total, which counts the
// requests each backend instance served, so spreading over replicas is visible
// (instances are few and expire with their lifecycle state).
func (rt *Router) CountRequests(reg prometheus.Registerer) {
	rt.perInstance = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "apichain_gateway_backend_requests_total",
		Help: "Requests delegated to each backend instance that served them.",
	}, []string{"service", "instance"})
	reg.MustRegister(rt.perInstance)
}

// Changed is closed when the instances may have changed, and with them the routes.
func (rt *Router) Changed() <-chan struct{} { return rt.reg.Changed() }

// RetainConns keeps the pool in step with the instances (call it when they change):
// connections to instances that are gone close once their calls finish, and those to
// instances that say they are ready are dialled again now, not after the backoff from when
// they were down (a restarted replica on the same address). static addresses are kept.
func (rt *Router) RetainConns(static []string) {
	keep := map[string]bool{}
	var ready []string
	for _, st := range rt.reg.Instances() {
		keep[st.GetAddress()] = true
		if lifecycle.Routable(st) {
			ready = append(ready, st.GetAddress())
		}
	}
	for _, a := range static {
		keep[a] = true
	}
	rt.pool.Retain(keep)
	rt.pool.Reconnect(ready)
}

// CloseConns lets go of every pooled connection (each closes once its calls finish).
func (rt *Router) CloseConns() { rt.pool.CloseAll() }

// Conn is the pooled connection to addr.
func (rt *Router) Conn(addr string) (*Conn, error) { return rt.pool.Get(addr) }

func (rt *Router) served(t Target) {
	if rt.perInstance != nil {
		rt.perInstance.WithLabelValues(t.Service, t.Instance).Inc()
	}
}

// Target is one backend instance.
type Target struct {
	Service  string
	Instance string
	Addr     string
}

// plan lists the delegates to try in order. When some service serves gv, only that service's
// instances are tried (the route table); otherwise every service, in chain order.
func (rt *Router) plan(gv string) []Target {
	byService := map[string][]*lifecyclev1.InstanceState{}
	for _, st := range rt.reg.Instances() {
		if rt.routable(st) {
			byService[st.GetService()] = append(byService[st.GetService()], st)
		}
	}
	for _, svc := range topology.Chain() {
		var serving []*lifecyclev1.InstanceState
		for _, st := range byService[svc] {
			for _, s := range st.GetServed() {
				if s == gv {
					serving = append(serving, st)
					break
				}
			}
		}
		if len(serving) > 0 {
			return rt.rotate(svc, serving)
		}
	}
	var out []Target
	for _, svc := range topology.Chain() {
		if insts := byService[svc]; len(insts) > 0 {
			out = append(out, rt.rotate(svc, insts)[0])
		}
	}
	return out
}

// rotate orders a service's instances round-robin, so retries go to another replica.
func (rt *Router) rotate(svc string, insts []*lifecyclev1.InstanceState) []Target {
	c, _ := rt.rr.LoadOrStore(svc, new(atomic.Uint64))
	start := int(c.(*atomic.Uint64).Add(1))
	out := make([]Target, 0, len(insts))
	for i := range insts {
		st := insts[(start+i)%len(insts)]
		out = append(out, Target{Service: svc, Instance: st.GetInstanceId(), Addr: st.GetAddress()})
	}
	return out
}

// Proxied reports whether an instance that may take requests forwards gv to an aggregated
// API server (a remote APIService): its requests go as HTTP exchanges.
func (rt *Router) Proxied(gv string) bool {
	for _, st := range rt.reg.Instances() {
		if lifecycle.Routable(st) && slices.Contains(st.GetProxied(), gv) {
			return true
		}
	}
	return false
}

// Complete reports whether every backend service has an instance past MuxAndDiscoveryComplete.
func (rt *Router) Complete() bool {
	done := map[string]bool{}
	for _, st := range rt.reg.Instances() {
		for _, s := range st.GetSignals() {
			if s.GetName() == "MuxAndDiscoveryComplete" {
				done[st.GetService()] = true
			}
		}
	}
	for _, svc := range topology.Chain() {
		if !done[svc] {
			return false
		}
	}
	return true
}

// Invoke calls fn on the delegates for gv in order until one serves the request. An instance
// that is unreachable is skipped for the next instance of the same service.
func Invoke[T any](ctx context.Context, rt *Router, gv string, fn func(ctx context.Context, conn grpc.ClientConnInterface) (T, error)) (T, error) {
	var zero T
	skipService := ""
	// unavailable is the last Unavailable answer: if no delegate serves the request, an
	// unreachable one might have, so the answer is 503, not the end of the chain's 404.
	var unavailable error
	var undialed []Target // ready by their state, but not connected yet: the request never left
	for _, t := range rt.plan(gv) {
		if t.Service == skipService {
			continue
		}
		conn, err := rt.pool.Get(t.Addr)
		if err != nil {
			continue
		}
		resp, err := fn(ctx, conn)
		switch {
		case err == nil:
			rt.served(t)
			return resp, nil
		case rpcstatus.IsNotServed(err):
			skipService = t.Service
			continue
		case status.Code(err) == codes.Unavailable && ctx.Err() == nil:
			unavailable = err
			if notSent(err) {
				undialed = append(undialed, t)
			}
			continue // try another replica of the same service
		default:
			return zero, err
		}
	}
	// Every replica that answered Unavailable did so before the request reached it (a
	// restarted instance whose connection is still backing off): connect now and send it
	// once more, which cannot do anything twice.
	for _, t := range undialed {
		conn, err := rt.pool.Get(t.Addr)
		if err != nil || !connectWithin(ctx, conn, reconnectWait) {
			continue
		}
		if resp, err := fn(ctx, conn); err == nil {
			rt.served(t)
			return resp, nil
		} else if status.Code(err) != codes.Unavailable {
			return zero, err
		}
	}
	if unavailable != nil {
		return zero, unavailable
	}
	if !rt.Complete() {
		return zero, ErrChainIncomplete
	}
	return zero, ErrEndOfChain
}

// reconnectWait bounds how long a request waits for a ready instance's connection.
const reconnectWait = 2 * time.Second

// notSent reports a gRPC failure to reach the server at all (dialing failed), so the request
// was not sent.
func notSent(err error) bool {
	msg := status.Convert(err).Message()
	return strings.Contains(msg, "Error while dialing") || strings.Contains(msg, "connection refused")
}

// connectWithin connects conn now (skipping its backoff) and waits up to d for it to be ready.
func connectWithin(ctx context.Context, conn *Conn, d time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	conn.ResetConnectBackoff()
	conn.Connect()
	for state := conn.GetState(); state != connectivity.Ready; state = conn.GetState() {
		if !conn.WaitForStateChange(ctx, state) {
			return false
		}
	}
	return true
}

// AnyInstance picks a routable instance of svc.
func (rt *Router) AnyInstance(svc string) (Target, bool) {
	var insts []*lifecyclev1.InstanceState
	for _, st := range rt.reg.Service(svc) {
		if rt.routable(st) {
			insts = append(insts, st)
		}
	}
	if len(insts) == 0 {
		return Target{}, false
	}
	return rt.rotate(svc, insts)[0], true
}
