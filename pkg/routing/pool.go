package routing

import (
	"context"
	"sync"

	"github.com/apichain/apichain/pkg/inprocess"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
)

// Pool keeps one gRPC connection per backend instance address. A connection leaves the pool
// when its instance leaves the routing set (its state expired, NATS lost or back, the replica
// shut down), but is closed only once the calls on it have finished: a routing change never
// cuts a request.
type Pool struct {
	mu    sync.Mutex
	creds credentials.TransportCredentials
	opts  []grpc.DialOption
	conns map[string]*Conn
}

// NewPool dials backends with creds and opts (the gateway adds its interceptors).
func NewPool(creds credentials.TransportCredentials, opts ...grpc.DialOption) *Pool {
	return &Pool{creds: creds, opts: opts, conns: map[string]*Conn{}}
}

// Get returns the connection to addr, dialing it (lazily) the first time.
func (p *Pool) Get(addr string) (*Conn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.conns[addr]; ok {
		return c, nil
	}
	cc, err := grpc.NewClient(addr, append([]grpc.DialOption{grpc.WithTransportCredentials(p.creds),
		grpc.WithContextDialer(inprocess.Dial), // a backend of this process: in memory
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64 << 20))}, p.opts...)...)
	if err != nil {
		return nil, err
	}
	c := &Conn{ClientConn: cc, pool: p, addr: addr}
	p.conns[addr] = c
	return c, nil
}

// Retain lets go of the connections to addresses not in keep: each closes once its calls
// have finished.
func (p *Pool) Retain(keep map[string]bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for addr, c := range p.conns {
		if !keep[addr] {
			delete(p.conns, addr)
			c.retire()
		}
	}
}

// Reconnect makes the connections to addrs, if any, that are waiting out a reconnect
// backoff try again at once.
func (p *Pool) Reconnect(addrs []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, a := range addrs {
		if c, ok := p.conns[a]; ok && c.GetState() == connectivity.TransientFailure {
			c.ResetConnectBackoff()
		}
	}
}

// CloseAll lets go of every connection.
func (p *Pool) CloseAll() { p.Retain(nil) }

// Conn is a pooled connection to one backend instance. It counts the calls on it, so that
// one that left the pool closes after its last call rather than under it.
type Conn struct {
	*grpc.ClientConn
	pool *Pool
	addr string

	mu      sync.Mutex
	calls   int
	retired bool // out of the pool: close after the last call
	closed  bool
}

var _ grpc.ClientConnInterface = (*Conn)(nil)

// Invoke makes a unary call.
func (c *Conn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	cc, done, err := c.begin()
	if err != nil {
		return err
	}
	defer done()
	return cc.Invoke(ctx, method, args, reply, opts...)
}

// NewStream opens a stream; it counts as a call until it finishes.
func (c *Conn) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	cc, done, err := c.begin()
	if err != nil {
		return nil, err
	}
	var once sync.Once
	finish := func() { once.Do(done) }
	s, err := cc.NewStream(ctx, desc, method, append(opts, grpc.OnFinish(func(error) { finish() }))...)
	if err != nil {
		finish()
		return nil, err
	}
	return s, nil
}

// begin counts a call. A caller that got this connection before it closed (it left the pool
// between the routing decision and the call) makes the call on the pool's connection to the
// same address instead.
func (c *Conn) begin() (*grpc.ClientConn, func(), error) {
	c.mu.Lock()
	if !c.closed {
		c.calls++
		c.mu.Unlock()
		return c.ClientConn, c.end, nil
	}
	c.mu.Unlock()
	fresh, err := c.pool.Get(c.addr)
	if err != nil {
		return nil, nil, err
	}
	return fresh.begin()
}

func (c *Conn) end() { c.settle(func() { c.calls-- }) }

// retire closes the connection now if no call is on it, otherwise after the last one.
func (c *Conn) retire() { c.settle(func() { c.retired = true }) }

// settle applies change, then closes the connection if it is retired and idle.
func (c *Conn) settle(change func()) {
	c.mu.Lock()
	change()
	closing := c.retired && c.calls == 0 && !c.closed
	c.closed = c.closed || closing
	c.mu.Unlock()
	if closing {
		_ = c.ClientConn.Close()
	}
}
