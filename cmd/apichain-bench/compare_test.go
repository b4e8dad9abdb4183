package main

import (
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	k8stesting "k8s.io/client-go/testing"
)

func TestComparisonRatios(t *testing.T) {
	base := &Report{Server: "kube", Results: []Result{
		{Operation: opCreate, Count: 100, Elapsed: time.Second, Latency: Summary{P50: 4 * time.Millisecond, P99: 10 * time.Millisecond},
			ServerCPU: 300 * time.Millisecond},
		{Operation: opList, Count: 10, Elapsed: time.Second, Latency: Summary{P50: 20 * time.Millisecond, P99: 40 * time.Millisecond}},
		{Operation: opWatch, Count: 50, Elapsed: time.Second},
	}}
	subject := &Report{Server: "apichain", Results: []Result{
		{Operation: opCreate, Count: 150, Elapsed: time.Second, Latency: Summary{P50: 2 * time.Millisecond, P99: 20 * time.Millisecond},
			ServerCPU: 150 * time.Millisecond},
		{Operation: opList, Count: 10, Errors: 10, Elapsed: time.Second, ServerCPU: time.Second},
		{Operation: opGet, Count: 10, Elapsed: time.Second},
	}}
	got := Comparison{Baseline: base, Subject: subject}.Ratios()
	assert.Equal(t, []Ratio{
		// 3 ms of the baseline's CPU per create against 1 ms.
		{Operation: opCreate, Throughput: 1.5, P50: 2, P99: 0.5, CPU: 3},
		{Operation: opList}, // nothing succeeded on the subject (and no CPU on the baseline): no ratio
	}, got, "operations both measured, in the subject's order")
}

// The same workload against two servers, the baseline first, then the ratio table; a failed
// operation on either side fails the comparison.
func TestCLIComparison(t *testing.T) {
	kube, apichain := newFakeServer(), newFakeServer()
	var order []string
	byName := map[string]*fakeServer{"kube.kubeconfig": kube, "apichain.kubeconfig": apichain}
	factory := func(kubeconfig string) (kubernetes.Interface, string, error) {
		order = append(order, kubeconfig)
		return byName[kubeconfig], kubeconfig, nil
	}
	args := append(append([]string{}, smallFlags...), "--kubeconfig", "apichain.kubeconfig", "--baseline-kubeconfig", "kube.kubeconfig")
	code, stdout, _ := runCLI(t, factory, args...)
	require.Equal(t, exitOK, code)
	assert.Equal(t, []string{"kube.kubeconfig", "apichain.kubeconfig"}, order)
	for _, f := range []*fakeServer{kube, apichain} {
		assert.Positive(t, f.pages.Load(), "each server got the workload")
	}
	assert.Contains(t, stdout, "apichain.kubeconfig compared with kube.kubeconfig (baseline)")
	for _, op := range []string{opCreate, opGet, opList, opUpdate, opUpdateConflict, opWatch, opDelete} {
		assert.Regexp(t, `(?m)^`+op+`\s+[0-9.]+\s+[0-9.]+\s+[0-9.]+x\s`, stdout)
	}

	code, stdout, _ = runCLI(t, factory, append(args, "--json")...)
	require.Equal(t, exitOK, code)
	var doc struct {
		Mode     string
		OK       bool
		Baseline struct{ Server string }
		Subject  struct{ Server string }
		Ratios   []struct {
			Operation  string
			Throughput float64
		}
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
	assert.Equal(t, "comparison", doc.Mode)
	assert.True(t, doc.OK)
	assert.Equal(t, "kube.kubeconfig", doc.Baseline.Server)
	assert.Equal(t, "apichain.kubeconfig", doc.Subject.Server)
	assert.Len(t, doc.Ratios, 7)

	var n atomic.Int64
	kube.PrependReactor("create", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		if n.Add(1) == 1 {
			return true, nil, errInternal
		}
		return false, nil, nil
	})
	code, stdout, _ = runCLI(t, factory, args...)
	assert.Equal(t, exitFailed, code, "a failure on the baseline fails the comparison")
	assert.Contains(t, stdout, "FAILED: a run had failed operations")
}
