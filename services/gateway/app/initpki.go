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
	var dataDir, backendName string
	var hosts []string
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
			return nil
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", "apichain-data", "Data directory.")
	cmd.Flags().StringSliceVar(&hosts, "external-hostname", nil, "Extra names and IPs for the gateway's serving certificate.")
	cmd.Flags().StringVar(&backendName, "backend-server-name", topology.BackendServerName, "Name in the backends' serving certificate.")
	return cmd
}
