package main

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	k8stesting "k8s.io/client-go/testing"
)

// watchOnly is a workload whose other phases are minimal.
func watchOnly(watchers, events int) workloadConfig {
	cfg := smallConfig()
	cfg.Objects, cfg.ConflictObjects, cfg.Lists, cfg.Updates = 1, 1, 0, 0
	cfg.Watchers, cfg.WatchEvents = watchers, events
	return cfg
}

func TestWatchFanOut(t *testing.T) {
	f := newFakeServer()
	rep := run(t, f, watchOnly(10, 30))
	res := resultByOp(t, rep, opWatch)
	assert.Equal(t, 300, res.Count)
	assert.Zero(t, res.Errors, "%v", res.ErrorSamples)
	assert.Equal(t, 300, res.Latency.N, "one latency per (event, watcher) delivery")
	assert.Positive(t, res.Latency.Min)
	assert.LessOrEqual(t, res.Latency.Max, res.Elapsed)
	assert.Equal(t, []string{"10 watchers x 30 events"}, res.Notes)
	assert.True(t, rep.OK())

	// The watches started from the resource version of a list, with the label selector.
	var watches int
	for _, a := range f.Actions() {
		if w, ok := a.(k8stesting.WatchActionImpl); ok {
			watches++
			assert.Equal(t, setLabel+"="+watchSet, w.WatchRestrictions.Labels.String())
			assert.NotEmpty(t, w.WatchRestrictions.ResourceVersion)
		}
	}
	assert.Equal(t, 10, watches)
}

// replaceFirstWatch makes the first watch request return what first returns; the
// others reach the fake server.
func replaceFirstWatch(f *fakeServer, first func() (watch.Interface, error)) {
	var done atomic.Bool
	f.PrependWatchReactor("configmaps", func(k8stesting.Action) (bool, watch.Interface, error) {
		if done.Swap(true) {
			return false, nil, nil
		}
		w, err := first()
		return true, w, err
	})
}

func TestWatchFailures(t *testing.T) {
	tests := []struct {
		name       string
		first      func() (watch.Interface, error)
		wantSample string
		wantNote   string
	}{
		{
			name:       "watch fails to start",
			first:      func() (watch.Interface, error) { return nil, errInternal },
			wantSample: "starting watch: Internal error occurred: injected failure",
			wantNote:   "1 watches failed to start",
		},
		{
			name: "error event",
			first: func() (watch.Interface, error) {
				w := watch.NewRaceFreeFake()
				w.Error(&apierrors.NewResourceExpired("too old resource version").ErrStatus)
				return w, nil
			},
			wantSample: "watch error event: too old resource version",
		},
		{
			name: "closed by the server",
			first: func() (watch.Interface, error) {
				w := watch.NewRaceFreeFake()
				w.Stop()
				return w, nil
			},
			wantSample: "watch closed by the server before all events arrived",
		},
		{
			name:     "events never arrive",
			first:    func() (watch.Interface, error) { return watch.NewRaceFreeFake(), nil },
			wantNote: "timed out after 50ms waiting for deliveries",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeServer()
			replaceFirstWatch(f, tt.first)
			cfg := watchOnly(4, 15)
			cfg.WatchTimeout = 50 * time.Millisecond
			rep := run(t, f, cfg)
			res := resultByOp(t, rep, opWatch)
			assert.Equal(t, 60, res.Count)
			assert.Equal(t, 15, res.Errors, "exactly the one watcher's deliveries are missing")
			assert.Equal(t, 45, res.Latency.N)
			if tt.wantSample != "" {
				require.Len(t, res.ErrorSamples, 1)
				assert.Equal(t, ErrorSample{Message: tt.wantSample, Count: 1}, res.ErrorSamples[0])
			}
			if tt.wantNote != "" {
				assert.Contains(t, res.Notes, tt.wantNote)
			}
			assert.Equal(t, exitFailed, rep.ExitCode())
			assert.True(t, strings.HasSuffix(table(rep), "FAILED: 15 operations failed\n"))
		})
	}
}

// Failed creates mean missing deliveries: every watcher misses that event.
func TestWatchCreateFailures(t *testing.T) {
	f := newFakeServer()
	f.PrependReactor("create", "configmaps", failWhere(func(name string) bool { return name == watchObjectName(7) }, errInternal))
	cfg := watchOnly(5, 10)
	cfg.WatchTimeout = 50 * time.Millisecond
	res := resultByOp(t, run(t, f, cfg), opWatch)
	assert.Equal(t, 5, res.Errors)
	assert.Contains(t, res.Notes, "1 creates failed")
}

// receive ignores what is not an ADDED event of a watch object, and counts each
// object once.
func TestReceive(t *testing.T) {
	index := map[string]int{watchObjectName(0): 0, watchObjectName(1): 1}
	started := make([]atomic.Int64, 2)
	base := time.Now()
	started[0].Store(1)
	started[1].Store(1)
	cm := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	w := watch.NewRaceFreeFake()
	w.Add(cm("someone-else"))
	w.Modify(cm(watchObjectName(0)))
	w.Add(cm(watchObjectName(0)))
	w.Add(cm(watchObjectName(0))) // duplicate
	w.Add(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: watchObjectName(1)}})
	w.Action(watch.Bookmark, cm(""))
	w.Add(cm(watchObjectName(1)))
	lat, err := receive(context.Background(), w, index, base, started)
	require.NoError(t, err)
	assert.Len(t, lat, 2)

	// An ADDED event for an object whose create has not started is a server bug.
	started[1].Store(0)
	w = watch.NewRaceFreeFake()
	w.Add(cm(watchObjectName(1)))
	_, err = receive(context.Background(), w, index, base, started)
	assert.EqualError(t, err, "ADDED event for watch-000001 before it was created")
}
