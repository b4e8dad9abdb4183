package app

import (
	"fmt"

	"github.com/apichain/apichain/pkg/certs"
	"github.com/apichain/apichain/pkg/topology"
	"github.com/spf13/cobra"
)

// InitPKICommand creates the cluster's certificates once (idempotent), for deployments where
// backends must have theirs before the gateway starts (docker compose's init step).
func InitPKICommand() *cobra.Command {
	var dataDir, backendName, bundlesDir string
	var hosts, etcdMembers []string
	cmd := &cobra.Command{
		Use:          "init-pki",
		Short:        "Create (or keep) the CA, serving, client and backend certificates in --data-dir/pki",
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pki, err := certs.EnsurePKI(dataDir, topology.ServingHosts(hosts...), []string{backendName})
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), "certificates in", pki.Dir)
			if bundlesDir == "" {
				return nil
			}
			err = pki.EnsureBundles(certs.Bundles{Dir: bundlesDir, Backends: topology.Chain(), BackendHost: backendName,
				FrontProxyClients: []string{topology.Aggregator}, EtcdMembers: etcdMembers})
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), "each backend's and etcd's own credentials in", bundlesDir)
			return nil
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", "apichain-data", "Data directory.")
	cmd.Flags().StringSliceVar(&hosts, "external-hostname", nil, "Extra names and IPs for the gateway's serving certificate.")
	cmd.Flags().StringVar(&backendName, "backend-server-name", topology.BackendServerName, "Name in the backends' serving certificate.")
	cmd.Flags().StringVar(&bundlesDir, "bundles-dir", "", "Also make, in a directory per backend (and one for etcd), only what that process needs: "+
		"its own serving, healthcheck and etcd client certificates and keys, and the CA certificates; never a CA key or the gateway's client key.")
	cmd.Flags().StringSliceVar(&etcdMembers, "etcd-member", nil, "Host names of etcd's members, each given a certificate for clients and peers signed by etcd's own CA (with --bundles-dir).")
	return cmd
}
