// Command extensions runs apichain's extensions backend.
package main

import (
	"os"

	"github.com/apichain/apichain/pkg/backend"
	"github.com/apichain/apichain/services/extensions/extensions"
)

func main() {
	if err := backend.Command(extensions.Service, extensions.Served, extensions.Setup).Execute(); err != nil {
		os.Exit(1)
	}
}
