package server

import (
	"context"
	"net"

	"google.golang.org/grpc"
)

// GRPCTransport serves a grpc.Server natively (the backends' transport).
type GRPCTransport struct {
	srv *grpc.Server
	ln  net.Listener
	// stopping is closed when Shutdown starts, so streaming handlers (watches) can end.
	stopping chan struct{}
}

// NewGRPCTransport wraps srv.
func NewGRPCTransport(srv *grpc.Server) *GRPCTransport {
	return &GRPCTransport{srv: srv, stopping: make(chan struct{})}
}

// Stopping is closed when shutdown starts ending long-running streams.
func (t *GRPCTransport) Stopping() <-chan struct{} { return t.stopping }

// Serve serves ln.
func (t *GRPCTransport) Serve(ln net.Listener) error {
	t.ln = ln
	return t.srv.Serve(ln)
}

// StopListening closes the listener; established connections keep serving.
func (t *GRPCTransport) StopListening() error {
	if t.ln == nil {
		return nil
	}
	return t.ln.Close()
}

// Shutdown ends streams, then stops gracefully, forcibly once ctx is done.
func (t *GRPCTransport) Shutdown(ctx context.Context) error {
	close(t.stopping)
	done := make(chan struct{})
	go func() { t.srv.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		t.srv.Stop()
		<-done
	}
	return nil
}
