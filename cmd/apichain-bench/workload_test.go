package main

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
)

func run(t *testing.T, f *fakeServer, cfg workloadConfig) *Report {
	t.Helper()
	rep, err := runWorkload(context.Background(), f, cfg, t.Logf)
	require.NoError(t, err)
	for _, r := range rep.Results {
		assert.LessOrEqual(t, r.Errors, r.Count, "%s: more errors than operations", r.Operation)
	}
	return rep
}

func TestWorkloadAllPhasesSucceed(t *testing.T) {
	f := newFakeServer()
	cfg := smallConfig()
	rep := run(t, f, cfg)
	out := table(rep)
	t.Log("\n" + out)

	var ops []string
	for _, r := range rep.Results {
		ops = append(ops, r.Operation)
	}
	require.Equal(t, []string{opCreate, opGet, opList, opUpdateConflict, opUpdate, opWatch, opDelete}, ops)
	rest := cfg.Objects - cfg.ConflictObjects // the objects of the update and delete phases
	want := map[string]int{opCreate: cfg.Objects, opGet: cfg.Objects, opList: cfg.Lists, opUpdate: rest, opUpdateConflict: cfg.Updates,
		opWatch: cfg.Watchers * cfg.WatchEvents, opDelete: rest}
	for _, r := range rep.Results {
		assert.Equal(t, want[r.Operation], r.Count, r.Operation)
		assert.Zero(t, r.Errors, "%s: %v", r.Operation, r.ErrorSamples)
		assert.Equal(t, r.Count, r.Latency.N, r.Operation)
	}
	assert.True(t, rep.OK())
	assert.Equal(t, exitOK, rep.ExitCode())
	assert.True(t, strings.HasSuffix(out, "\nOK\n"))

	// Lists were paginated: 60 objects in pages of 25 is 3 pages per list (+1 for the
	// watch phase's resource version).
	assert.EqualValues(t, cfg.Lists*3+1, f.pages.Load())
	// Every conflict the server returned was counted, and no increment was lost.
	assert.EqualValues(t, f.conflicts.Load(), resultByOp(t, rep, opUpdateConflict).Conflicts)
	ns := nsOf(t, f)
	assert.Equal(t, cfg.Updates, f.counters(t, ns, cfg.ConflictObjects))
	assert.True(t, strings.HasPrefix(ns, namespacePrefix), ns)
	// The namespace was deleted at the end.
	_, err := f.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "namespace still there: %v", err)
}

func TestWorkloadKeep(t *testing.T) {
	f := newFakeServer()
	cfg := smallConfig()
	cfg.Keep = true
	rep := run(t, f, cfg)
	_, err := f.CoreV1().Namespaces().Get(context.Background(), rep.Namespace, metav1.GetOptions{})
	assert.NoError(t, err)
}

// Conflicts are retried and counted, not failures.
func TestUpdateConflictsAreRetried(t *testing.T) {
	f := newFakeServer()
	var injected atomic.Int64
	f.PrependReactor("update", "configmaps", failFirst(40, apierrors.NewConflict(configMapsGR, "x", nil), &injected))
	cfg := smallConfig()
	cfg.Concurrency = 1 // no real contention: exactly the injected conflicts
	rep := run(t, f, cfg)
	res := resultByOp(t, rep, opUpdateConflict)
	assert.Zero(t, res.Errors, "%v", res.ErrorSamples)
	assert.Equal(t, 40, res.Conflicts)
	assert.InDelta(t, 40.0/float64(cfg.Updates), res.ConflictsPerOp(), 1e-9)
	assert.Contains(t, table(rep), "conflicts=40 (0.20/op)")
	assert.Equal(t, cfg.Updates, f.counters(t, rep.Namespace, cfg.ConflictObjects))
	assert.True(t, rep.OK())
}

// Giving up on conflicts is a failure.
func TestUpdateConflictGivingUpFails(t *testing.T) {
	f := newFakeServer()
	var injected atomic.Int64
	f.PrependReactor("update", "configmaps", failFirst(1<<62, apierrors.NewConflict(configMapsGR, "x", nil), &injected))
	cfg := smallConfig()
	cfg.Updates = 10
	cfg.ConflictBackoff.Steps = 3
	rep := run(t, f, cfg)
	res := resultByOp(t, rep, opUpdateConflict)
	assert.Equal(t, 10, res.Errors)
	assert.Equal(t, 30, res.Conflicts)
	require.NotEmpty(t, res.ErrorSamples)
	assert.Contains(t, res.ErrorSamples[0].Message, "gave up after 3 conflicting attempts")
	assert.Equal(t, exitFailed, rep.ExitCode())
	assert.Equal(t, cfg.Objects-cfg.ConflictObjects, resultByOp(t, rep, opUpdate).Errors, "the update phase's conflicts too")
	assert.True(t, strings.HasSuffix(table(rep), fmt.Sprintf("FAILED: %d operations failed\n", 10+cfg.Objects-cfg.ConflictObjects)))
}

// A non-conflict error is a failure at once, not retried.
func TestUpdateOtherErrorsFail(t *testing.T) {
	f := newFakeServer()
	var injected atomic.Int64
	f.PrependReactor("update", "configmaps", failFirst(5, errInternal, &injected))
	rep := run(t, f, smallConfig())
	res := resultByOp(t, rep, opUpdateConflict)
	assert.Equal(t, 5, res.Errors)
	assert.Equal(t, exitFailed, rep.ExitCode())
	assert.Equal(t, 5, rep.Failed())
}

// A server that acknowledges updates it does not store loses them; the counters show it.
func TestLostUpdatesAreFailures(t *testing.T) {
	f := newFakeServer()
	f.PrependReactor("update", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, a.(k8stesting.UpdateAction).GetObject(), nil // "success", not stored
	})
	cfg := smallConfig()
	rep := run(t, f, cfg)
	res := resultByOp(t, rep, opUpdateConflict)
	assert.Equal(t, cfg.Updates, res.Errors)
	assert.Contains(t, strings.Join(res.Notes, ";"), "lost updates: counters add up to 0 after 200 successful increments")
	assert.Equal(t, exitFailed, rep.ExitCode())
}

// Counters that cannot be read back are a failure, even when every update succeeded.
func TestUnverifiableCountersFail(t *testing.T) {
	f := newFakeServer()
	cfg := smallConfig()
	f.PrependReactor("get", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		// All increments are stored: this get is the verification.
		if f.rv.Load() == int64(cfg.Updates) && a.(k8stesting.GetAction).GetName() == objectName(0) {
			return true, nil, errInternal
		}
		return false, nil, nil
	})
	rep := run(t, f, cfg)
	res := resultByOp(t, rep, opUpdateConflict)
	assert.Equal(t, 1, res.Errors)
	assert.Contains(t, res.ErrorSamples, ErrorSample{Message: "verifying counters: Internal error occurred: injected failure", Count: 1})
	assert.Equal(t, exitFailed, rep.ExitCode())
}

// Failed creates are counted exactly, and show up again where they matter: gets of
// objects that do not exist fail too.
func TestCreateFailuresAreCounted(t *testing.T) {
	f := newFakeServer()
	bad := func(name string) bool { return name == objectName(3) || name == objectName(40) }
	f.PrependReactor("create", "configmaps", failWhere(bad, errInternal))
	rep := run(t, f, smallConfig())
	assert.Equal(t, 2, resultByOp(t, rep, opCreate).Errors)
	assert.Equal(t, 2, resultByOp(t, rep, opGet).Errors)
	assert.Zero(t, resultByOp(t, rep, opList).Errors, "lists must return the 58 objects that exist")
	assert.Equal(t, 4, rep.Failed())
	out := table(rep)
	assert.Contains(t, out, "create error (x2): Internal error occurred: injected failure")
	assert.True(t, strings.HasSuffix(out, "FAILED: 4 operations failed\n"))
	assert.NotContains(t, out, "\nOK")
}

// A list that misses objects is a failure even though every request succeeded.
func TestIncompleteListFails(t *testing.T) {
	f := newFakeServer()
	f.PrependReactor("list", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.ListActionImpl).ListOptions.Continue != "" {
			return true, &corev1.ConfigMapList{}, nil // later pages come back empty
		}
		return false, nil, nil
	})
	cfg := smallConfig()
	cfg.WatchEvents, cfg.Watchers = 0, 0
	rep := run(t, f, cfg)
	res := resultByOp(t, rep, opList)
	assert.Equal(t, cfg.Lists, res.Errors)
	require.NotEmpty(t, res.ErrorSamples)
	assert.Equal(t, "list returned 25 objects in 2 pages, want 60", res.ErrorSamples[0].Message)
}

func TestWorkloadInterrupted(t *testing.T) {
	f := newFakeServer()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep, err := runWorkload(ctx, f, smallConfig(), t.Logf)
	require.NoError(t, err)
	assert.True(t, rep.Interrupted)
	assert.Equal(t, exitFailed, rep.ExitCode())
	assert.Contains(t, table(rep), "FAILED: 0 operations failed (run interrupted)")
}

func TestWorkloadNamespaceFailure(t *testing.T) {
	f := newFakeServer()
	var n atomic.Int64
	f.PrependReactor("create", "namespaces", failFirst(1, apierrors.NewForbidden(corev1.Resource("namespaces"), "", nil), &n))
	_, err := runWorkload(context.Background(), f, smallConfig(), t.Logf)
	require.ErrorContains(t, err, "creating the benchmark namespace")
}

func TestWorkloadConfigValidation(t *testing.T) {
	cfg := smallConfig()
	cfg.Concurrency = 0
	cfg.ConflictObjects = cfg.Objects + 1
	err := cfg.validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--concurrency must be at least 1")
	assert.Contains(t, err.Error(), "--conflict-objects (61) must not exceed --objects (60)")
}
