// Command apichain runs the whole split API server in one process: the gateway and the
// aggregator, core and extensions backends, with an embedded etcd and NATS unless real ones
// are given (package allinone).
package main

import (
	"os"

	"github.com/apichain/apichain/cmd/apichain/allinone"
)

func main() {
	if err := allinone.NewCommand(nil).Execute(); err != nil {
		os.Exit(1)
	}
}
