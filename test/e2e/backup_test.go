package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// The all-in-one's embedded etcd is backed up while it serves (apichain etcd snapshot save)
// and restored into its data directory once it stopped (apichain etcd snapshot restore):
// every object of the snapshot is back, what was written after it is not, the replaced data
// is kept aside, and a client that saw a resourceVersion before the restore is told to list
// again (410 Gone), not left waiting for revisions that will never come.
func TestEtcdSnapshotAllInOne(t *testing.T) {
	data := tempDataDir(t)
	port := strconv.Itoa(freePort(t))
	startIn := func() (*process, *kubernetes.Clientset) {
		p := start(t, "apichain", "--data-dir", data, "--secure-port", port)
		c := waitKubeconfig(t, filepath.Join(data, "admin.kubeconfig"))
		c.waitReady(60 * time.Second)
		return p, kubernetes.NewForConfigOrDie(c.config)
	}
	apichain := func(args ...string) string {
		out, err := exec.Command(binary("apichain"), append(args, "--data-dir", data)...).CombinedOutput()
		require.NoError(t, err, "apichain %v: %s", args, out)
		return string(out)
	}
	ctx := context.Background()
	create := func(cs *kubernetes.Clientset, name string) string {
		cm, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		require.NoError(t, err)
		return cm.ResourceVersion
	}

	p, cs := startIn()
	var before []string
	for i := range 20 {
		before = append(before, fmt.Sprintf("before-%d", i))
		create(cs, before[i])
	}
	snap := filepath.Join(t.TempDir(), "apichain.db")
	out := apichain("etcd", "snapshot", "save", snap)
	assert.Regexp(t, `snapshot saved to .*: revision \d+, \d+ keys`, out)
	lastSeen := create(cs, "after")
	p.signal(sigterm)
	require.Equal(t, 0, p.wait(time.Minute))

	out = apichain("etcd", "snapshot", "restore", snap)
	assert.Contains(t, out, "the previous etcd data is kept in")
	kept, err := filepath.Glob(filepath.Join(data, "etcd.before-restore-*"))
	require.NoError(t, err)
	assert.Len(t, kept, 1, "the replaced data is kept")

	_, cs = startIn()
	for _, name := range before {
		_, err := cs.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{})
		assert.NoError(t, err, "%s, written before the snapshot, is restored", name)
	}
	_, err = cs.CoreV1().ConfigMaps("default").Get(ctx, "after", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "what was written after the snapshot is not there: %v", err)

	// A watch from before the restore: its revision is older than the restored etcd's
	// compaction, so the client lists again.
	w, err := cs.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{ResourceVersion: lastSeen})
	if err == nil {
		defer w.Stop()
		select {
		case ev := <-w.ResultChan():
			require.Equal(t, watch.Error, ev.Type, "%+v", ev)
			status, ok := ev.Object.(*metav1.Status)
			require.True(t, ok, "%T", ev.Object)
			assert.Equal(t, int32(410), status.Code, "%+v", status)
		case <-time.After(30 * time.Second):
			t.Fatal("a watch from a resourceVersion before the restore got nothing")
		}
	} else {
		assert.True(t, apierrors.IsResourceExpired(err) || apierrors.IsGone(err), "%v", err)
	}
	rv := create(cs, "restored")
	n, err := strconv.ParseInt(rv, 10, 64)
	require.NoError(t, err)
	assert.Greater(t, n, int64(1_000_000_000), "revisions moved on past every one a client saw")

	// Restoring under a running apichain is refused, and changes nothing.
	cmd := exec.Command(binary("apichain"), "etcd", "snapshot", "restore", snap, "--data-dir", data)
	out2, err := cmd.CombinedOutput()
	require.Error(t, err)
	assert.Contains(t, string(out2), "stop apichain before restoring")
	entries, err := os.ReadDir(data)
	require.NoError(t, err)
	asides := 0
	for _, e := range entries {
		if matched, _ := filepath.Match("etcd.before-restore-*", e.Name()); matched {
			asides++
		}
	}
	assert.Equal(t, 1, asides, "a refused restore moves nothing aside")
}

// checkBackupRestore runs docs/operations.md's backup and restore of the compose stack's etcd:
// a snapshot taken under load with etcd's own etcdctl in the etcd image, etcd's volume
// destroyed, the snapshot restored with etcdutl into a new one, and every create acknowledged
// before the snapshot began is there when the stack is back.
func (s *stack) checkBackupRestore(t *testing.T, cs *kubernetes.Clientset, hc *http.Client, cfg *rest.Config) {
	load := startLoad(t, configMaps(cs, "compose"), "backup")
	load.waitAcked(t, 100)
	acked := load.ackedNames()
	s.compose("exec", "-T", "etcd", "/app", "etcdctl", "snapshot", "save", "/backup/snapshot.db")
	load.waitAcked(t, len(acked)+100) // the load went on through the snapshot
	load.halt()
	backup := t.TempDir()
	require.NoError(t, os.Chmod(backup, 0o755))
	s.run(time.Minute, "docker", "cp", s.containers("etcd")[0]+":/backup/snapshot.db", filepath.Join(backup, "snapshot.db"))

	backends := []string{"core", "extensions", "aggregator"}
	s.compose(append([]string{"stop"}, backends...)...)
	s.compose("rm", "-f", "-s", "etcd")
	s.run(time.Minute, "docker", "volume", "rm", composeProject+"_etcd-data")
	s.compose("run", "--rm", "--no-deps", "--volume", filepath.Join(backup, "snapshot.db")+":/restore.db:ro", "etcd", "etcdutl", "snapshot", "restore", "/restore.db",
		"--data-dir", "/var/lib/etcd", "--name", "etcd0", "--initial-cluster", "etcd0=https://etcd:2380",
		"--initial-advertise-peer-urls", "https://etcd:2380", "--bump-revision", "1000000000", "--mark-compacted")
	s.compose("up", "-d", "--no-deps", "etcd")
	s.waitHealthy(s.containers("etcd")[0])
	s.compose(append([]string{"start"}, backends...)...)
	for _, svc := range backends {
		s.waitReadyInstances(hc, cfg, svc, len(s.containers(svc)))
	}

	names, err := configMaps(cs, "compose").names(context.Background())
	require.NoError(t, err)
	present := map[string]bool{}
	for _, n := range names {
		present[n] = true
	}
	for _, name := range acked {
		assert.True(t, present[name], "%s, acknowledged before the snapshot, is lost", name)
	}
	t.Logf("snapshot under load, etcd's volume destroyed, restored: all %d creates acknowledged before the snapshot are back (%d ConfigMaps in all)", len(acked), len(names))
}
