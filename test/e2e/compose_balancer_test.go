package e2e

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// gatewayRestartRounds is how many rolling restarts of both gateways
// TestComposeGatewaysBehindBalancer makes under load.
const gatewayRestartRounds = 3

// Two gateways behind the balancer (compose's defaults): rolling restarts of both under load
// from eight client-go workers (creates, gets, lists) and three watchers fail no request and
// lose no write, and every watcher sees every create once, its watches ended cleanly by the
// stopping gateway and resumed from their resourceVersion without a 410. Then a gateway is
// SIGKILLed under the same load: only requests in flight on its connections may fail, and no
// acknowledged write is lost.
func TestComposeGatewaysBehindBalancer(t *testing.T) {
	s, cs, _ := startStack(t, nil)
	s.kubectl("create", "namespace", "front")
	gateways := s.containers("gateway")
	require.Len(t, gateways, 2, "compose runs two gateways by default")
	s.waitBalancerUp(2)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cms := cs.CoreV1().ConfigMaps("front")
	list, err := cms.List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	raw := []*rawWatcher{startRawWatcher(ctx, cs, "front", list.ResourceVersion), startRawWatcher(ctx, cs, "front", list.ResourceVersion)}
	seen := &watched{added: map[string]int{}}
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return cms.Watch(ctx, o) },
	})
	require.NoError(t, err)
	defer rw.Stop()
	go seen.record(rw)

	var acked []string
	for round := 1; round <= gatewayRestartRounds; round++ {
		load := startLoadOf(t, configMaps(cs, "front"), fmt.Sprintf("r%d", round), 8)
		load.waitAcked(t, 100)
		for _, id := range gateways {
			// docker restart: SIGTERM, up to 30 s to stop (the gateway's stop_grace_period), start.
			s.run(2*time.Minute, "docker", "restart", "-t", "30", id)
			s.waitHealthy(id)
			s.waitBalancerUp(2)
			load.waitAcked(t, load.ackedCount()+100)
		}
		attempts, failed := load.stopAndCheck(t, false)
		t.Logf("rolling restart %d/%d of 2 gateways behind the balancer: %d creates attempted, %d failed, 0 lost",
			round, gatewayRestartRounds, attempts, failed)
		acked = append(acked, load.acked...)
	}

	// SIGKILL: what was in flight on the killed gateway's connections may fail; nothing
	// acknowledged is lost.
	load := startLoadOf(t, configMaps(cs, "front"), "kill", 8)
	load.waitAcked(t, 100)
	s.run(time.Minute, "docker", "kill", "--signal", "KILL", gateways[0])
	load.waitAcked(t, load.ackedCount()+200)
	s.run(time.Minute, "docker", "start", gateways[0])
	s.waitHealthy(gateways[0])
	s.waitBalancerUp(2)
	attempts, failed := load.stopAndCheck(t, true)
	t.Logf("a gateway SIGKILLed behind the balancer: %d creates attempted, %d failed (in flight on its connections), 0 lost", attempts, failed)
	acked = append(acked, load.acked...)

	require.Eventually(t, func() bool { return seen.count(acked) == len(acked) }, time.Minute, 100*time.Millisecond,
		"client-go's retry watcher sees every create")
	seen.mu.Lock()
	assert.Empty(t, seen.errors, "client-go's retry watcher gets no error (no 410)")
	for _, name := range acked {
		assert.Equal(t, 1, seen.added[name], "%s: ADDED once", name)
	}
	seen.mu.Unlock()
	for i, w := range raw {
		require.Eventually(t, func() bool { return w.count(acked) == len(acked) }, time.Minute, 100*time.Millisecond,
			"watcher %d sees every create", i)
		w.mu.Lock()
		assert.Empty(t, w.errors, "watcher %d: no error event (no 410)", i)
		for _, name := range acked {
			assert.Equal(t, 1, w.added[name], "watcher %d: %s ADDED once", i, name)
		}
		// The restarts ended watches cleanly; the SIGKILL may have cut one.
		assert.GreaterOrEqual(t, w.closes, 1, "watcher %d: the stopping gateways ended its watch", i)
		assert.LessOrEqual(t, w.resets, 1, "watcher %d: only the SIGKILL cuts a watch: %v", i, w.resetErrs)
		t.Logf("watcher %d: %d watches ended cleanly, %d cut (%v)", i, w.closes, w.resets, w.resetErrs)
		w.mu.Unlock()
	}
}

// waitBalancerUp waits until the balancer has n gateways in rotation (its statistics, read
// from the stack's network).
func (s *stack) waitBalancerUp(n int) {
	s.t.Helper()
	ip := strings.TrimSpace(s.run(time.Minute, "docker", "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}",
		s.containers("balancer")[0]))
	var up []string
	require.Eventually(s.t, func() bool {
		up = balancerUp(ip)
		return len(up) == n
	}, 2*time.Minute, 250*time.Millisecond, "the balancer has %d gateways up (has %v)", n, &up)
}

// balancerUp lists the gateways HAProxy's statistics say are UP.
func balancerUp(ip string) []string {
	resp, err := http.Get("http://" + ip + ":8404/stats;csv")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	rows, err := csv.NewReader(resp.Body).ReadAll()
	if err != nil || len(rows) == 0 {
		return nil
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[strings.TrimPrefix(name, "# ")] = i
	}
	var up []string
	for _, r := range rows[1:] {
		if r[col["pxname"]] == "gateways" && r[col["svname"]] != "BACKEND" && r[col["status"]] == "UP" {
			up = append(up, r[col["svname"]])
		}
	}
	return up
}

// rawWatcher watches ConfigMaps through client-go's REST client and resumes from the last
// resourceVersion it saw, telling a watch the server ended cleanly (the response's end) from
// one cut (any other read error), which client-go's watch interface does not.
type rawWatcher struct {
	mu        sync.Mutex
	added     map[string]int
	errors    []string
	closes    int
	resets    int
	resetErrs []string
}

func startRawWatcher(ctx context.Context, cs *kubernetes.Clientset, ns, rv string) *rawWatcher {
	w := &rawWatcher{added: map[string]int{}}
	go func() {
		for ctx.Err() == nil {
			err := w.watchOnce(ctx, cs, ns, &rv)
			if ctx.Err() != nil {
				return
			}
			w.mu.Lock()
			if errors.Is(err, io.EOF) {
				w.closes++
			} else {
				w.resets++
				w.resetErrs = append(w.resetErrs, err.Error())
				time.Sleep(100 * time.Millisecond) // no gateway may be reachable for a moment
			}
			w.mu.Unlock()
		}
	}()
	return w
}

// watchOnce runs one watch from *rv, advancing it, until the stream ends.
func (w *rawWatcher) watchOnce(ctx context.Context, cs *kubernetes.Clientset, ns string, rv *string) error {
	body, err := cs.CoreV1().RESTClient().Get().Namespace(ns).Resource("configmaps").
		Param("watch", "true").Param("resourceVersion", *rv).Param("allowWatchBookmarks", "true").Stream(ctx)
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	defer body.Close()
	dec := json.NewDecoder(bufio.NewReader(body))
	for {
		var ev struct {
			Type   string          `json:"type"`
			Object json.RawMessage `json:"object"`
		}
		if err := dec.Decode(&ev); err != nil {
			return err
		}
		if ev.Type == string(watch.Error) {
			w.mu.Lock()
			w.errors = append(w.errors, string(ev.Object))
			w.mu.Unlock()
			return fmt.Errorf("error event: %s", ev.Object)
		}
		var cm corev1.ConfigMap
		if err := json.Unmarshal(ev.Object, &cm); err != nil {
			return err
		}
		*rv = cm.ResourceVersion
		if ev.Type == string(watch.Added) {
			w.mu.Lock()
			w.added[cm.Name]++
			w.mu.Unlock()
		}
	}
}

func (w *rawWatcher) count(names []string) int {
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
