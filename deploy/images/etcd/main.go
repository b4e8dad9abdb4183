// Command etcd is the etcd server built from its Go module at the version pinned in go.mod,
// for images built without a registry. "etcd healthcheck" is its container healthcheck;
// "etcd is-leader" exits 0 only on the cluster's leader (chaos tests find whom to kill). Both
// read the member's metrics listener (--listen-metrics-urls http://127.0.0.1:2381), which
// answers without the client certificate its client port demands.
package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "healthcheck" {
		os.Exit(healthcheck())
	}
	if len(os.Args) > 1 && os.Args[1] == "is-leader" {
		os.Exit(isLeader())
	}
	etcdmain.Main(os.Args)
}

func healthcheck() int {
	if _, err := get("/health"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// metricsURL is where every member of the compose deployments serves /health and /metrics,
// on loopback only.
const metricsURL = "http://127.0.0.1:2381"

// isLeader reads the member's etcd_server_is_leader metric.
func isLeader() int {
	metrics, err := get("/metrics")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	for _, line := range strings.Split(metrics, "\n") {
		if line == "etcd_server_is_leader 1" {
			return 0
		}
	}
	return 1
}

func get(path string) (string, error) {
	c := &http.Client{Timeout: 3 * time.Second}
	resp, err := c.Get(metricsURL + path)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("etcd %s: %s", path, resp.Status)
	}
	return string(body), err
}
