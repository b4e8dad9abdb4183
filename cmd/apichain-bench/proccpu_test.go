package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
)

func TestStatTicks(t *testing.T) {
	// A command with spaces and parentheses; utime 250, stime 17.
	line := []byte("4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 17 0 0 20 0 8 0 1000 1000 100 18446744073709551615\n")
	n, err := statTicks(line)
	require.NoError(t, err)
	assert.EqualValues(t, 267, n)
	for _, bad := range []string{"4242 no parenthesis", "4242 (x) S 1 2", "4242 (x) S 1 2 3 4 5 6 7 8 9 10 x 17"} {
		_, err := statTicks([]byte(bad))
		assert.Error(t, err, bad)
	}
}

// burn uses the CPU for d of wall time.
func burn(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
}

func TestProcessCPUGrows(t *testing.T) {
	pid := strconv.Itoa(os.Getpid())
	before, err := processCPU(pid)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		burn(5 * time.Millisecond)
		after, err := processCPU(pid)
		return err == nil && after > before
	}, 10*time.Second, time.Millisecond)
	_, err = processCPU("0")
	assert.Error(t, err)
}

// With --cpu-pid-file naming the process the (fake, in-process) server runs in, each phase
// reports the CPU it used: creates that each burn 2 ms of CPU show it.
func TestCLIServerCPU(t *testing.T) {
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	require.NoError(t, os.WriteFile(pids, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600))
	f := newFakeServer()
	f.PrependReactor("create", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		burn(2 * time.Millisecond)
		return false, nil, nil
	})
	code, stdout, stderr := runCLI(t, fakeFactory(f), append(smallFlags, "--json", "--cpu-pid-file", pids)...)
	require.Equal(t, exitOK, code)
	var got struct {
		Results []struct {
			Operation string
			Count     int
			ServerCPU float64 `json:"server_cpu_seconds"`
			CPUPerOp  float64 `json:"server_cpu_ms_per_op"`
		}
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &got))
	require.Equal(t, opCreate, got.Results[0].Operation)
	create := got.Results[0]
	assert.Greater(t, create.ServerCPU, 0.0)
	assert.InDelta(t, create.ServerCPU*1000/float64(create.Count), create.CPUPerOp, 1e-6) // to the nanosecond CPUPerOp is in
	assert.Regexp(t, `(?m)^create\s.*server CPU [0-9.]+ s \([0-9.]+ ms/op\)`, stderr)
	assert.NotContains(t, stderr, "server CPU not read")

	require.NoError(t, os.WriteFile(pids, []byte("not-a-pid\n"), 0o600))
	code, _, stderr = runCLI(t, fakeFactory(newFakeServer()), append(smallFlags, "--cpu-pid-file", pids)...)
	assert.Equal(t, exitError, code)
	assert.Contains(t, stderr, `"not-a-pid" is not a PID`)
}
