// Command apichain runs the whole split API server in one process: the gateway and the
// aggregator, core and extensions backends, with an embedded etcd and NATS unless real
// ones are given. The services still talk gRPC (over loopback, mutual TLS) and publish their
// lifecycle over NATS, exactly as when they run as separate processes.
package main

import (
	"os"
)

func main() {
	if err := newCommand().Execute(); err != nil {
		os.Exit(1)
	}
}
