package app

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/apichain/apichain/pkg/certs"
	"github.com/apichain/apichain/pkg/lifecycle"
	"github.com/apichain/apichain/pkg/topology"
	"github.com/apichain/apichain/services/gateway/audit"
	"github.com/spf13/cobra"
)

// InitPKICommand creates the cluster's certificates once (idempotent), for deployments where
// backends must have theirs before the gateway starts (docker compose's init step).
func InitPKICommand() *cobra.Command {
	var dataDir, backendName, bundlesDir, auditSubjects, apiServerURL string
	var hosts, etcdMembers, natsHosts []string
	renewBefore := certs.RenewBefore
	cmd := &cobra.Command{
		Use:   "init-pki",
		Short: "Create (or keep, or renew) the CA, serving, client and backend certificates in --data-dir/pki",
		Long: `init-pki creates the cluster's certificates once and keeps them: run again, it reissues each
leaf certificate (serving, client, backend, etcd, NATS, front-proxy; never a CA) that is
missing, no longer fits, or expires within --renew-before. Leaves last a year and CAs ten. The
running processes load reissued files on their next connections, without a restart.`,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			certs.RenewBefore = renewBefore
			pki, err := certs.EnsurePKI(dataDir, topology.ServingHosts(hosts...), []string{backendName})
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), "certificates in", pki.Dir)
			if bundlesDir == "" {
				return nil
			}
			err = pki.EnsureBundles(certs.Bundles{Dir: bundlesDir, Backends: topology.Chain(), BackendHost: backendName,
				FrontProxyClients: []string{topology.Aggregator}, EtcdMembers: etcdMembers, NATSHosts: natsHosts,
				APIServerURL: apiServerURL})
			if err != nil {
				return err
			}
			if len(natsHosts) > 0 {
				if err := ensureNATSUsers(pki, bundlesDir, auditSubjects, natsHosts); err != nil {
					return err
				}
			}
			// One encryption at rest configuration, the same in every backend's bundle.
			encConfig := filepath.Join(pki.Dir, certs.EncryptionConfigFile)
			if err := certs.EnsureEncryptionConfig(encConfig); err != nil {
				return err
			}
			data, err := os.ReadFile(encConfig)
			if err != nil {
				return err
			}
			for _, svc := range topology.Chain() {
				if err := os.WriteFile(filepath.Join(bundlesDir, svc, certs.EncryptionConfigFile), data, 0o600); err != nil {
					return err
				}
			}
			fmt.Fprintln(cmd.OutOrStdout(), "each service's own credentials in", bundlesDir)
			return nil
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", "apichain-data", "Data directory.")
	cmd.Flags().DurationVar(&renewBefore, "renew-before", renewBefore, "Reissue leaf certificates expiring within this long (8760h renews every one now).")
	cmd.Flags().StringSliceVar(&hosts, "external-hostname", nil, "Extra names and IPs for the gateway's serving certificate.")
	cmd.Flags().StringVar(&backendName, "backend-server-name", topology.BackendServerName, "Name in the backends' serving certificate.")
	cmd.Flags().StringVar(&bundlesDir, "bundles-dir", "", "Also make, in a directory per backend (and one for etcd), only what that process needs: "+
		"its own serving, healthcheck and etcd client certificates and keys, and the CA certificates; never a CA key or the gateway's client key.")
	cmd.Flags().StringSliceVar(&natsHosts, "nats-host", nil, "With --bundles-dir: the NATS server's host name, or its cluster nodes' (more than one makes a "+
		"JetStream cluster of them). Their certificate, an nkey per service (the gateway's in --data-dir/pki) and their configuration (TLS for clients and routes; "+
		"each service may write only its own lifecycle state) go in <bundles-dir>/nats.")
	cmd.Flags().StringVar(&auditSubjects, "audit-nats-subjects", "apichain.audit.>", "Subjects the gateway may publish audit events to (--audit-nats-subject).")
	cmd.Flags().StringVar(&apiServerURL, "api-server-url", "", "With --bundles-dir: where the backends reach the gateways to review their metrics endpoint's callers "+
		"(each backend's bundle gets delegation.kubeconfig, its identity in system:apichain:backends), and <bundles-dir>/prometheus gets a client certificate in system:monitoring.")
	cmd.Flags().StringSliceVar(&etcdMembers, "etcd-member", nil, "Host names of etcd's members, each given a certificate for clients and peers signed by etcd's own CA (with --bundles-dir).")
	return cmd
}

// ensureNATSUsers keeps an nkey per service (each backend's in its bundle, the gateway's in its
// data directory's pki) and writes the NATS server's configuration naming them.
func ensureNATSUsers(pki *certs.PKI, bundlesDir, auditSubjects string, hosts []string) error {
	var users []lifecycle.NATSUser
	for _, svc := range topology.Services() {
		seed := filepath.Join(bundlesDir, svc, certs.BundleNkey)
		var publish []string
		if svc == topology.Gateway {
			seed = filepath.Join(pki.Dir, certs.BundleNkey)
			for _, api := range []string{"CREATE", "UPDATE", "INFO"} {
				publish = append(publish, "$JS.API.STREAM."+api+"."+audit.StreamName)
			}
			publish = append(publish, auditSubjects)
		}
		key, err := certs.EnsureNkey(seed)
		if err != nil {
			return err
		}
		users = append(users, lifecycle.NATSUser{Service: svc, PublicKey: key, Publish: publish})
	}
	// The configuration reads the bundle where compose mounts it in the NATS container (/pki)
	// and stores JetStream in its data volume (/data).
	dir := filepath.Join(bundlesDir, certs.NATSBundle)
	conf := lifecycle.NATSServerConfig(lifecycle.NATSServer{CertFile: filepath.Join("/pki", certs.BundleNATSCert),
		KeyFile: filepath.Join("/pki", certs.BundleNATSKey), CAFile: filepath.Join("/pki", certs.BundleCA), StoreDir: "/data", Nodes: hosts}, users)
	return os.WriteFile(filepath.Join(dir, certs.BundleNATSConf), conf, 0o644)
}
