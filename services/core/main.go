// Command core runs apichain's core backend: /api/v1 and the built-in groups.
package main

import (
	"github.com/apichain/apichain/pkg/backend"
	"github.com/apichain/apichain/services/core/app"
)

func main() {
	backend.Main(app.NewOptions().Service(), "apichain core backend: /api/v1 and the built-in groups")
}
