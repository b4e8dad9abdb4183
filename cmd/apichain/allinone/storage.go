package allinone

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apichain/apichain/pkg/backend"
	"github.com/apichain/apichain/pkg/certs"
	"github.com/apichain/apichain/pkg/registry"
	"github.com/apichain/apichain/pkg/storage"
	"github.com/apichain/apichain/pkg/storage/encryption"
	aggregator "github.com/apichain/apichain/services/aggregator/app"
	core "github.com/apichain/apichain/services/core/app"
	extensions "github.com/apichain/apichain/services/extensions/app"
	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// storedResources are every service's stored resources (custom resources kept their keys).
func storedResources() []*registry.Resource {
	return slices.Concat(core.Stored(), aggregator.Stored(), extensions.Stored())
}

// layout is how the all-in-one (and the migrate command) keep objects: kube's flags.
type layout struct {
	prefix, media string
	// stopAfter stops a migration after that many objects, as a crash would (tests).
	stopAfter int
}

// migrate moves an earlier apichain's objects in etcd to kube's layout when there are any,
// with the encryption configuration in file ("" none).
func (l layout) migrate(ctx context.Context, c *clientv3.Client, file string, log *slog.Logger) error {
	prefix := storage.CleanPrefix(l.prefix)
	needed, err := registry.NeedsLayoutMigration(ctx, c, prefix)
	if err != nil || !needed {
		return err
	}
	m := &registry.Migration{Client: c, Prefix: prefix, Resources: storedResources(), MediaType: l.media, StopAfter: l.stopAfter}
	if file != "" {
		values, err := encryption.Load(ctx, file, false)
		if err != nil {
			return fmt.Errorf("encryption configuration: %w", err)
		}
		m.Values = values
	}
	log.Info("moving objects from apichain's earlier storage layout to kube-apiserver's", "prefix", prefix)
	run, err := m.Run(ctx)
	if run != nil {
		log.Info("storage layout migration", "moved", strings.Join(run.Summary(), ", "), "kept", len(run.Kept), "done", err == nil)
		for _, k := range run.Kept {
			log.Warn("object left at its old key: kube's key holds another", "key", k)
		}
	}
	return err
}

// storageCommand is "apichain storage migrate": the layout migration for deployments whose
// services start separately (they refuse to start on an earlier layout and name this command).
func storageCommand() *cobra.Command {
	l := layout{prefix: storage.DefaultPrefix, media: registry.StorageMediaTypes[0]}
	var dataDir, encryptionFile, caFile, certFile, keyFile string
	var servers []string
	cmd := &cobra.Command{Use: "storage", Short: "apichain's storage in etcd"}
	migrate := &cobra.Command{
		Use:   "migrate",
		Short: "Move objects an earlier apichain kept in its own layout to kube-apiserver's keys and encodings, once, with every apichain service stopped",
		Long: "Moves every object an earlier apichain kept under <prefix>/<group|core>/<resource>/ to kube-apiserver's key, in kube's\n" +
			"encoding (protobuf for built-in kinds) and re-encrypted for its new key, each in one etcd transaction: interrupted, run\n" +
			"it again. Runs are recorded in etcd at <prefix>" + registry.LayoutRecordKey + ". The all-in-one does this itself on start.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			if len(servers) == 0 { // the all-in-one's embedded etcd, apichain stopped
				endpoints, stop, err := startStoppedEtcd(ctx, dataDir)
				if err != nil {
					return err
				}
				defer stop()
				servers = endpoints
				if generated := filepath.Join(dataDir, "pki", certs.EncryptionConfigFile); encryptionFile == "" {
					if _, err := os.Stat(generated); err == nil {
						encryptionFile = generated
					}
				}
			}
			tlsConfig, err := (&backend.Options{EtcdCAFile: caFile, EtcdCertFile: certFile, EtcdKeyFile: keyFile}).EtcdTLS()
			if err != nil {
				return err
			}
			c, err := storage.NewClient(servers, tlsConfig)
			if err != nil {
				return err
			}
			defer c.Close()
			needed, err := registry.NeedsLayoutMigration(ctx, c, storage.CleanPrefix(l.prefix))
			if err == nil && !needed {
				_, err = fmt.Fprintln(cmd.OutOrStdout(), "nothing to migrate: no object is in apichain's earlier layout")
				return err
			}
			if err := l.migrate(ctx, c, encryptionFile, log); err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "migrated: every object is in kube-apiserver's layout (recorded at %s%s)\n", storage.CleanPrefix(l.prefix), registry.LayoutRecordKey)
			return err
		},
	}
	fs := migrate.Flags()
	fs.StringVar(&dataDir, "data-dir", "apichain-data", "The all-in-one's data directory, whose embedded etcd is migrated when --etcd-servers is not given.")
	fs.StringSliceVar(&servers, "etcd-servers", nil, "etcd client URLs (default: the embedded etcd in --data-dir).")
	fs.StringVar(&caFile, "etcd-cafile", "", "SSL Certificate Authority file used to secure etcd communication.")
	fs.StringVar(&certFile, "etcd-certfile", "", "SSL certification file used to secure etcd communication.")
	fs.StringVar(&keyFile, "etcd-keyfile", "", "SSL key file used to secure etcd communication.")
	fs.StringVar(&l.prefix, "etcd-prefix", l.prefix, "The prefix to prepend to all resource paths in etcd.")
	fs.StringVar(&l.media, "storage-media-type", l.media, "The media type to use to store objects in storage.")
	fs.StringVar(&encryptionFile, "encryption-provider-config", "",
		"The encryption configuration the services run with (default: the one generated in --data-dir's pki/, if any).")
	fs.IntVar(&l.stopAfter, "testing-stop-after", 0, "Stop after moving this many objects, as a crash would (tests only).")
	_ = fs.MarkHidden("testing-stop-after")
	cmd.AddCommand(migrate)
	return cmd
}
