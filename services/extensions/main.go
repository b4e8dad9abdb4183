// Command extensions runs apichain's extensions backend: CRDs and custom resources.
package main

import (
	"github.com/apichain/apichain/pkg/backend"
	"github.com/apichain/apichain/services/extensions/extensions"
)

func main() {
	backend.Main(extensions.Service, "apichain extensions backend: CRDs and custom resources")
}
