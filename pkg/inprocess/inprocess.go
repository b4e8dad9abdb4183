// Package inprocess connects a process's gRPC clients to the gRPC servers the same process
// runs in memory, instead of over loopback TCP: the all-in-one's gateway and backends call
// each other on every request, and a call through the kernel's TCP stack cost them about
// twice the time of one through memory (BenchmarkHop). The connections stay the same
// otherwise (the same TLS, the same servers): a server's listener takes connections from
// both, and Dial connects in memory only to addresses this process serves.
package inprocess

import (
	"context"
	"errors"
	"net"
	"sync"

	"google.golang.org/grpc/test/bufconn"
)

// pipeSize is the buffer of each direction of an in-memory connection, allocated when it is
// made: 16 TLS records. (At 1 MiB, the all-in-one's dozen connections held 20 MiB more.)
const pipeSize = 256 << 10

var (
	mu        sync.RWMutex
	listeners = map[string]*Listener{}
)

// Listener accepts the connections of a TCP listener and the in-memory ones Dial makes to
// the addresses it is listening for.
type Listener struct {
	net.Listener // TCP
	mem          *bufconn.Listener
	addrs        []string
	conns        chan net.Conn
	errs         chan error
	done         chan struct{}
	once         sync.Once
}

// Listen takes, besides tcp's connections, those Dial makes in this process to tcp's address
// or to any of also (the address the server advertises, say).
func Listen(tcp net.Listener, also ...string) *Listener {
	l := &Listener{Listener: tcp, mem: bufconn.Listen(pipeSize), addrs: append([]string{tcp.Addr().String()}, also...),
		conns: make(chan net.Conn), errs: make(chan error), done: make(chan struct{})}
	mu.Lock()
	for _, a := range l.addrs {
		listeners[a] = l
	}
	mu.Unlock()
	go l.pump(tcp)
	go l.pump(l.mem)
	return l
}

// pump hands from's connections to Accept, and its errors: a closed listener's ends it (the
// memory listener is closed only by Close, whose done ends it), any other (too many open
// files, say) is Accept's to return, as net.Listener's would be, and the next connection is
// taken after it.
func (l *Listener) pump(from net.Listener) {
	for {
		c, err := from.Accept()
		if err != nil {
			select {
			case l.errs <- err:
			case <-l.done:
				return
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		select {
		case l.conns <- c:
		case <-l.done:
			c.Close()
			return
		}
	}
}

// Accept returns the next connection, from TCP or from memory.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case err := <-l.errs:
		return nil, err
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops both, and Dial connects to the addresses over TCP again.
func (l *Listener) Close() error {
	var err error
	l.once.Do(func() {
		mu.Lock()
		for _, a := range l.addrs {
			if listeners[a] == l {
				delete(listeners, a)
			}
		}
		mu.Unlock()
		close(l.done)
		err = errors.Join(l.Listener.Close(), l.mem.Close())
	})
	return err
}

// Dial connects to addr (host:port) in memory when this process listens for it, and over
// TCP otherwise: a grpc.WithContextDialer.
func Dial(ctx context.Context, addr string) (net.Conn, error) {
	mu.RLock()
	l := listeners[addr]
	mu.RUnlock()
	if l != nil {
		if c, err := l.mem.DialContext(ctx); err == nil {
			return c, nil
		}
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}
