package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// leaderKills is how many times TestComposeEtcdLeaderLoss kills etcd's leader.
const leaderKills = 5

// On the three-member etcd deployment, etcd's leader is SIGKILLed under continuous creates,
// again and again: no request fails, no acknowledged create is lost, and a watch sees every
// create once without a 410.
func TestComposeEtcdLeaderLoss(t *testing.T) {
	s, cs, _ := startStack(t, []string{"compose.etcd3.yaml"}, "ETCD_SERVERS=https://etcd:2379,https://etcd1:2379,https://etcd2:2379")
	s.kubectl("create", "namespace", "chaos")
	cms := cs.CoreV1().ConfigMaps("chaos")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	list, err := cms.List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	seen := &watched{added: map[string]int{}}
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return cms.Watch(ctx, o) },
	})
	require.NoError(t, err)
	defer rw.Stop()
	go seen.record(rw)

	var acked []string
	for round := 1; round <= leaderKills; round++ {
		load := startLoad(t, configMaps(cs, "chaos"), fmt.Sprintf("r%d", round))
		load.waitAcked(t, 100)
		leader := s.etcdLeader()
		s.run(time.Minute, "docker", "kill", "--signal", "KILL", leader)
		killed := time.Now()
		require.Eventually(t, func() bool { l, ok := s.findEtcdLeader(); return ok && l != leader }, time.Minute, 100*time.Millisecond,
			"the other two members elect a leader")
		elected := time.Since(killed)
		load.waitAcked(t, load.ackedCount()+100)
		s.run(time.Minute, "docker", "start", leader)
		s.waitHealthy(leader)
		load.waitAcked(t, load.ackedCount()+50)
		attempts, failed := load.stopAndCheck(t, false)
		t.Logf("leader kill %d/%d: a new leader after %s; %d creates attempted, %d failed, 0 lost",
			round, leaderKills, elected.Round(100*time.Millisecond), attempts, failed)
		acked = append(acked, load.acked...)
	}

	// The watch saw each acknowledged create once, and was never told its version expired.
	require.Eventually(t, func() bool { return seen.count(acked) == len(acked) }, time.Minute, 100*time.Millisecond,
		"the watch sees every create")
	seen.mu.Lock()
	defer seen.mu.Unlock()
	assert.Empty(t, seen.errors, "the watch ends in no error (no 410)")
	for _, name := range acked {
		assert.Equal(t, 1, seen.added[name], "%s: ADDED once", name)
	}
}

// watched records a watch's ADDED events and errors.
type watched struct {
	mu     sync.Mutex
	added  map[string]int
	errors []string
}

func (w *watched) record(rw *watchtools.RetryWatcher) {
	for ev := range rw.ResultChan() {
		w.mu.Lock()
		switch ev.Type {
		case watch.Added:
			w.added[ev.Object.(*corev1.ConfigMap).Name]++
		case watch.Error:
			w.errors = append(w.errors, fmt.Sprintf("%v", ev.Object))
		}
		w.mu.Unlock()
	}
}

func (w *watched) count(names []string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, name := range names {
		if w.added[name] > 0 {
			n++
		}
	}
	return n
}

// etcdLeader is the container of etcd's leader.
func (s *stack) etcdLeader() string {
	s.t.Helper()
	var leader string
	require.Eventually(s.t, func() bool { var ok bool; leader, ok = s.findEtcdLeader(); return ok }, time.Minute, 100*time.Millisecond,
		"etcd has a leader")
	return leader
}

// findEtcdLeader asks each running etcd member whether it leads.
func (s *stack) findEtcdLeader() (string, bool) {
	for _, svc := range []string{"etcd", "etcd1", "etcd2"} {
		out, _ := exec.Command("docker", "ps", "-q", "--filter", "label=com.docker.compose.project="+composeProject,
			"--filter", "label=com.docker.compose.service="+svc).Output()
		for _, id := range strings.Fields(string(out)) {
			if exec.Command("docker", "exec", id, "/app", "is-leader").Run() == nil {
				return id, true
			}
		}
	}
	return "", false
}

// waitHealthy waits for a container's healthcheck to pass.
func (s *stack) waitHealthy(id string) {
	s.t.Helper()
	require.Eventually(s.t, func() bool {
		out, err := exec.Command("docker", "inspect", "-f", "{{.State.Health.Status}}", id).Output()
		return err == nil && strings.TrimSpace(string(out)) == "healthy"
	}, 2*time.Minute, 250*time.Millisecond, "container %s healthy again", id)
}
