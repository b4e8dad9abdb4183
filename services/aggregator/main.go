// Command aggregator runs apichain's aggregator backend.
package main

import (
	"os"

	"github.com/apichain/apichain/pkg/backend"
	"github.com/apichain/apichain/services/aggregator/aggregator"
)

func main() {
	if err := backend.Command(aggregator.Service, aggregator.Served, aggregator.Setup).Execute(); err != nil {
		os.Exit(1)
	}
}
