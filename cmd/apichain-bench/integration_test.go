package main

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// integrationEnv names the kubeconfig of a real server to run the workload against.
const integrationEnv = "APICHAIN_BENCH_KUBECONFIG"

// TestIntegrationWorkload runs a reduced workload through the command line against
// the server of $APICHAIN_BENCH_KUBECONFIG (any kube-compatible server, e.g. a running
// `make run`). Without it, the same run goes against the in-memory fake server
// (paginated lists, optimistic concurrency, real fake watches), so the test still
// checks the whole CLI path and the accounting of every phase.
func TestIntegrationWorkload(t *testing.T) {
	factory, kubeconfig := newClientset, os.Getenv(integrationEnv)
	if kubeconfig == "" {
		t.Logf("%s is not set: using the in-memory fake server", integrationEnv)
		factory, kubeconfig = fakeFactory(newFakeServer()), "unused"
	}
	// Watch events stay below the fake watchers' 100-event buffers.
	code, stdout, _ := runCLI(t, factory, "--kubeconfig", kubeconfig, "--json", "--concurrency", "8",
		"--objects", "700", "--lists", "4", "--updates", "200", "--conflict-objects", "2",
		"--watchers", "20", "--watch-events", "50")
	require.Equal(t, exitOK, code)
	var got struct {
		OK      bool
		Results []struct {
			Operation string
			Count     int
			Errors    int
			Conflicts int
			Latency   struct{ N int } `json:"latency_ms"`
		}
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &got))
	assert.True(t, got.OK)
	want := map[string]int{opCreate: 700, opGet: 700, opList: 4, opUpdate: 698, opUpdateConflict: 200, opWatch: 20 * 50, opDelete: 698}
	require.Len(t, got.Results, len(want))
	for _, r := range got.Results {
		assert.Equal(t, want[r.Operation], r.Count, r.Operation)
		assert.Zero(t, r.Errors, r.Operation)
		assert.Equal(t, r.Count, r.Latency.N, r.Operation)
	}
}
