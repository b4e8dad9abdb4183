// Command aggregator runs apichain's aggregator backend: APIServices and proxying to external API servers.
package main

import (
	"github.com/apichain/apichain/pkg/backend"
	"github.com/apichain/apichain/services/aggregator/app"
)

func main() {
	backend.Main((&app.Options{}).Service(), "apichain aggregator backend: APIServices and proxying to external API servers")
}
