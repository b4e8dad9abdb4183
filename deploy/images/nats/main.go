// Command nats-server is the NATS server built from its Go module at the version pinned in
// go.mod, for images built without a registry. "nats-server healthcheck" asks its monitor port
// whether it is healthy: in a cluster, whether its JetStream is current with the others'
// ("healthcheck --js-enabled-only": whether it runs with JetStream on).
package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "healthcheck" {
		os.Exit(healthcheck(slices.Contains(os.Args[2:], "--js-enabled-only")))
	}
	fs := flag.NewFlagSet("nats-server", flag.ExitOnError)
	opts, err := server.ConfigureOptions(fs, os.Args[1:], server.PrintServerAndExit, fs.Usage, server.PrintTLSHelpAndDie)
	if err != nil {
		server.PrintAndDie(err.Error())
	}
	s, err := server.NewServer(opts)
	if err != nil {
		server.PrintAndDie(err.Error())
	}
	if err := server.Run(s); err != nil {
		server.PrintAndDie(err.Error())
	}
	s.WaitForShutdown()
}

// healthcheck asks the monitor port. jsEnabledOnly asks only whether the server is up with
// JetStream on, not whether its JetStream is current: a swarm puts a task in DNS only once it
// is healthy, so a node that waited for its routes to be resolvable would never be.
func healthcheck(jsEnabledOnly bool) int {
	c := &http.Client{Timeout: 3 * time.Second}
	url := "http://127.0.0.1:8222/healthz"
	if jsEnabledOnly {
		url += "?js-enabled-only=true"
	}
	resp, err := c.Get(url)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintln(os.Stderr, "nats health:", resp.Status)
		return 1
	}
	return 0
}
