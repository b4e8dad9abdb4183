// Command extensions runs apichain's extensions backend: CRDs and custom resources.
package main

import (
	"github.com/apichain/apichain/pkg/backend"
	"github.com/apichain/apichain/services/extensions/app"
)

func main() {
	backend.Main(app.Service, "apichain extensions backend: CRDs and custom resources")
}
