// Package embedded starts an in-process NATS server and etcd member for the all-in-one and
// for tests; production deployments point at real ones instead.
package embedded

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
)

// NATS is a running in-process NATS server with JetStream.
type NATS struct {
	srv *natsserver.Server
}

// StartNATS starts NATS with JetStream storing under dir, on host:port (port 0 picks one).
func StartNATS(dir, host string, port int) (*NATS, error) {
	if port == 0 {
		port = natsserver.RANDOM_PORT
	}
	opts := &natsserver.Options{
		ServerName: "apichain-embedded",
		Host:       host,
		Port:       port,
		JetStream:  true,
		StoreDir:   filepath.Join(dir, "nats"),
		NoSigs:     true,
		NoLog:      true,
		MaxPayload: 8 << 20,
	}
	srv, err := natsserver.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("nats: %w", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		return nil, fmt.Errorf("nats: not ready for connections within 10s")
	}
	return &NATS{srv: srv}, nil
}

// URL is the client URL.
func (n *NATS) URL() string {
	addr := n.srv.Addr().(*net.TCPAddr)
	return "nats://" + net.JoinHostPort(addr.IP.String(), strconv.Itoa(addr.Port))
}

// Stop shuts the server down and waits for it.
func (n *NATS) Stop() {
	n.srv.Shutdown()
	n.srv.WaitForShutdown()
}
