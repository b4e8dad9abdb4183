// Command gateway runs apichain's front door.
package main

import (
	"os"

	"github.com/apichain/apichain/services/gateway/gateway"
)

func main() {
	if err := gateway.Command().Execute(); err != nil {
		os.Exit(1)
	}
}
