// Command core runs apichain's core backend.
package main

import (
	"os"

	"github.com/apichain/apichain/pkg/backend"
	"github.com/apichain/apichain/services/core/core"
)

func main() {
	if err := backend.Command(core.Service, core.Served, core.Setup).Execute(); err != nil {
		os.Exit(1)
	}
}
