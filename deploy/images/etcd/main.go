// Command etcd is the etcd server built from its Go module at the version pinned in go.mod,
// for images built without a registry. "etcd healthcheck" is its container healthcheck.
package main

import (
	"fmt"
	"net/http"
	"os"
	"time"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "healthcheck" {
		os.Exit(healthcheck())
	}
	etcdmain.Main(os.Args)
}

func healthcheck() int {
	c := &http.Client{Timeout: 3 * time.Second}
	resp, err := c.Get("http://127.0.0.1:2379/health")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintln(os.Stderr, "etcd health:", resp.Status)
		return 1
	}
	return 0
}
