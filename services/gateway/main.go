// Command gateway runs apichain's front door.
package main

import "github.com/apichain/apichain/services/gateway/app"

func main() {
	app.Main()
}
