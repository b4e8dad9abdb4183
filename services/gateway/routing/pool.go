package routing

import (
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
)

// Pool keeps one gRPC connection per backend instance address.
type Pool struct {
	mu    sync.Mutex
	creds credentials.TransportCredentials
	opts  []grpc.DialOption
	conns map[string]*grpc.ClientConn
}

// NewPool dials backends with creds and opts (the gateway adds its interceptors).
func NewPool(creds credentials.TransportCredentials, opts ...grpc.DialOption) *Pool {
	return &Pool{creds: creds, opts: opts, conns: map[string]*grpc.ClientConn{}}
}

// Get returns the connection to addr, dialing it (lazily) the first time.
func (p *Pool) Get(addr string) (*grpc.ClientConn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.conns[addr]; ok {
		return c, nil
	}
	c, err := grpc.NewClient(addr, append([]grpc.DialOption{grpc.WithTransportCredentials(p.creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64 << 20))}, p.opts...)...)
	if err != nil {
		return nil, err
	}
	p.conns[addr] = c
	return c, nil
}

// Retain closes connections to addresses not in keep.
func (p *Pool) Retain(keep map[string]bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for addr, c := range p.conns {
		if !keep[addr] {
			_ = c.Close()
			delete(p.conns, addr)
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

// CloseAll closes every connection.
func (p *Pool) CloseAll() { p.Retain(nil) }
