package allinone

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/apichain/apichain/pkg/embedded"
	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"
	clientsnapshot "go.etcd.io/etcd/client/v3/snapshot"
	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"
)

// restoreRevisionBump is how far a restore moves etcd's revision on, with the old ones marked
// compacted, as etcd advises for Kubernetes: every resourceVersion a client saw before the
// restore is then older than the server's, so watches and informers list again instead of
// waiting for revisions that will never come or seeing one reused for other objects.
const restoreRevisionBump = 1_000_000_000

// etcdCommand is "apichain etcd": backups of the all-in-one's embedded etcd. Deployments with
// their own etcd use etcd's tools (the compose etcd image ships them; docs/operations.md).
func etcdCommand() *cobra.Command {
	dataDir := "apichain-data"
	cmd := &cobra.Command{Use: "etcd", Short: "Back up and restore the all-in-one's embedded etcd"}
	cmd.PersistentFlags().StringVar(&dataDir, "data-dir", dataDir, "The all-in-one's data directory.")
	snap := &cobra.Command{Use: "snapshot", Short: "etcd snapshots of the embedded etcd"}
	snap.AddCommand(&cobra.Command{
		Use:   "save FILE",
		Short: "Write a snapshot of the embedded etcd to FILE, while apichain runs or not",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return snapshotSave(cmd.Context(), dataDir, args[0], cmd.OutOrStdout())
		},
	}, &cobra.Command{
		Use:   "restore FILE",
		Short: "Replace the embedded etcd's data with the snapshot in FILE (apichain stopped); the old data is kept aside",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return snapshotRestore(dataDir, args[0], cmd.OutOrStdout())
		},
	})
	cmd.AddCommand(snap)
	return cmd
}

// startStoppedEtcd starts the embedded etcd of a data directory no apichain runs on, holding
// the directory's lock until stop (embedded.ErrDataDirInUse: an apichain runs on it).
func startStoppedEtcd(ctx context.Context, dataDir string) (endpoints []string, stop func(), err error) {
	lock, err := embedded.LockDataDir(dataDir)
	if err != nil {
		return nil, nil, err
	}
	if _, err := os.Stat(filepath.Join(dataDir, "etcd")); err != nil {
		lock.Unlock()
		return nil, nil, fmt.Errorf("no embedded etcd data in %s: %w", dataDir, err)
	}
	e, err := embedded.StartEtcd(ctx, dataDir, 0, 0)
	if err != nil {
		lock.Unlock()
		return nil, nil, err
	}
	return e.Endpoints(), func() { e.Stop(); lock.Unlock() }, nil
}

// snapshotSave snapshots the etcd running on dataDir or, when apichain is stopped, the etcd
// it started for the purpose on the same data.
func snapshotSave(ctx context.Context, dataDir, file string, out io.Writer) error {
	endpoints, stop, err := startStoppedEtcd(ctx, dataDir)
	switch {
	case err == nil:
		defer stop()
	case errors.Is(err, embedded.ErrDataDirInUse):
		if endpoints, err = embedded.RunningEtcdEndpoints(dataDir); err != nil {
			return err
		}
	default:
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	if _, err := clientsnapshot.SaveWithVersion(ctx, zap.NewNop(), clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second}, file); err != nil {
		return fmt.Errorf("snapshot of %v: %w", endpoints, err)
	}
	st, err := snapshot.NewV3(zap.NewNop()).Status(file)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "snapshot saved to %s: revision %d, %d keys, %d bytes\n", file, st.Revision, st.TotalKey, st.TotalSize)
	return err
}

// snapshotRestore puts the snapshot in the place of dataDir/etcd, which is renamed aside
// first and put back if the restore fails.
func snapshotRestore(dataDir, file string, out io.Writer) error {
	if _, err := os.Stat(file); err != nil {
		return err
	}
	lock, err := embedded.LockDataDir(dataDir)
	if err != nil {
		return fmt.Errorf("stop apichain before restoring: %w", err)
	}
	defer lock.Unlock()
	etcdDir := filepath.Join(dataDir, "etcd")
	aside := ""
	if _, err := os.Stat(etcdDir); err == nil {
		aside = fmt.Sprintf("%s.before-restore-%s", etcdDir, time.Now().UTC().Format("20060102T150405Z"))
		if err := os.Rename(etcdDir, aside); err != nil {
			return err
		}
	}
	// The embedded etcd's member: its name and cluster token; its peer URL is picked anew at
	// every start, which a single member does not mind.
	const peer = "http://127.0.0.1:2380"
	err = snapshot.NewV3(zap.NewNop()).Restore(snapshot.RestoreConfig{
		SnapshotPath: file, Name: embedded.EtcdMemberName, OutputDataDir: etcdDir,
		PeerURLs: []string{peer}, InitialCluster: embedded.EtcdMemberName + "=" + peer, InitialClusterToken: "etcd-cluster",
		RevisionBump: restoreRevisionBump, MarkCompacted: true,
	})
	if err != nil {
		_ = os.RemoveAll(etcdDir)
		if aside != "" {
			if rerr := os.Rename(aside, etcdDir); rerr != nil {
				return fmt.Errorf("restore failed: %w; and putting %s back failed: %v", err, aside, rerr)
			}
		}
		return fmt.Errorf("restore failed, the data directory is as it was: %w", err)
	}
	if aside != "" {
		_, _ = fmt.Fprintf(out, "the previous etcd data is kept in %s\n", aside)
	}
	_, err = fmt.Fprintf(out, "restored %s into %s (revisions moved on by %d); start apichain\n", file, etcdDir, restoreRevisionBump)
	return err
}
