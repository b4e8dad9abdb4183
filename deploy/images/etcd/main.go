// Command etcd is the etcd server built from its Go module at the version pinned in go.mod,
// for images built without a registry. "etcd healthcheck" is its container healthcheck;
// "etcd is-leader" exits 0 only on the cluster's leader (chaos tests find whom to kill). Both
// read the member's metrics listener (--listen-metrics-urls http://127.0.0.1:2381), which
// answers without the client certificate its client port demands.
//
// "etcd etcdctl …" and "etcd etcdutl …" are etcd's own tools, of the same version, for
// backups (snapshot save, snapshot restore) and maintenance: the image has no shell and no
// other binary (docs/operations.md).
package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.etcd.io/etcd/etcdctl/v3/ctlv3"
	"go.etcd.io/etcd/etcdutl/v3/etcdutl"
	"go.etcd.io/etcd/pkg/v3/cobrautl"
	"go.etcd.io/etcd/server/v3/etcdmain"
)

// etcdutlCommand is etcdutl's command line as its own main package builds it (that package
// cannot be imported): the commands of go.etcd.io/etcd/etcdutl/v3/etcdutl under a root with
// its persistent flags.
func etcdutlCommand() *cobra.Command {
	root := &cobra.Command{Use: "etcdutl", Short: "An administrative command line tool for etcd3."}
	root.PersistentFlags().DurationVar(&etcdutl.FlockTimeout, "timeout", 10*time.Second, "time to wait to obtain a file lock on db file, 0 to block indefinitely")
	root.PersistentFlags().StringVarP(&etcdutl.OutputFormat, "write-out", "w", "simple", "set the output format (fields, json, protobuf, simple, table)")
	root.AddCommand(etcdutl.NewDefragCommand(), etcdutl.NewSnapshotCommand(), etcdutl.NewHashKVCommand(),
		etcdutl.NewVersionCommand(), etcdutl.NewMigrateCommand())
	root.SetHelpTemplate(`{{.UsageString}}`)
	return root
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "healthcheck" {
		os.Exit(healthcheck())
	}
	if len(os.Args) > 1 && os.Args[1] == "is-leader" {
		os.Exit(isLeader())
	}
	if len(os.Args) > 1 && os.Args[1] == "etcdctl" {
		os.Args = os.Args[1:] // its commands parse os.Args[1:]
		ctlv3.MustStart()
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "etcdutl" {
		os.Args = os.Args[1:]
		if err := etcdutlCommand().Execute(); err != nil {
			cobrautl.ExitWithError(cobrautl.ExitError, err)
		}
		return
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
