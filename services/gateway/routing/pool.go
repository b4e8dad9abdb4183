package gateway

import (
	"crypto/tls"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// connPool keeps one gRPC connection per backend instance address.
type connPool struct {
	mu    sync.Mutex
	creds credentials.TransportCredentials
	conns map[string]*grpc.ClientConn
}

func newConnPool(tlsCfg *tls.Config) *connPool {
	return &connPool{creds: credentials.NewTLS(tlsCfg), conns: map[string]*grpc.ClientConn{}}
}

// get returns the connection to addr, dialing it (lazily) the first time.
func (p *connPool) get(addr string) (*grpc.ClientConn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.conns[addr]; ok {
		return c, nil
	}
	c, err := grpc.NewClient(addr, grpc.WithTransportCredentials(p.creds), grpc.WithChainUnaryInterceptor(collectWarnings),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)))
	if err != nil {
		return nil, err
	}
	p.conns[addr] = c
	return c, nil
}

// retain closes connections to addresses not in keep.
func (p *connPool) retain(keep map[string]bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for addr, c := range p.conns {
		if !keep[addr] {
			_ = c.Close()
			delete(p.conns, addr)
		}
	}
}

func (p *connPool) closeAll() { p.retain(nil) }
