// Command gateway runs apichain's front door.
package main

import "github.com/apichain/apichain/services/gateway/gateway"

func main() {
	gateway.Main()
}
