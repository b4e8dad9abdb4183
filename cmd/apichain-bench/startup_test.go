package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startupArgs runs the test binary itself as the server (see helperServer).
func startupArgs(flags ...string) []string {
	args := append([]string{"startup", "--readyz-kubeconfig", "{{dir}}/admin.kubeconfig"}, flags...)
	return append(args, "--", os.Args[0], "{{dir}}")
}

func TestStartupMeasuresTimeToReady(t *testing.T) {
	t.Setenv(helperEnv, "ready")
	log := filepath.Join(t.TempDir(), "dirs")
	t.Setenv(helperLogEnv, log)
	code, stdout, stderr := runCLI(t, nil, startupArgs("--runs", "3", "--json")...)
	require.Equal(t, exitOK, code)

	var got struct {
		OK    bool
		Ready struct {
			N                int
			Median, Min, Max float64
		} `json:"ready_ms"`
		Runs []struct {
			ReadyMs float64 `json:"ready_ms"`
			Exit    string
			Error   string
		}
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &got))
	assert.True(t, got.OK)
	require.Len(t, got.Runs, 3)
	for _, r := range got.Runs {
		assert.Positive(t, r.ReadyMs)
		assert.Empty(t, r.Error)
		assert.Empty(t, r.Exit, "the helper exits 0 on SIGINT")
	}
	assert.Equal(t, 3, got.Ready.N)
	assert.LessOrEqual(t, got.Ready.Min, got.Ready.Median)
	assert.LessOrEqual(t, got.Ready.Median, got.Ready.Max)
	assert.Contains(t, stderr, "startup-to-ready over 3 runs: median")
	assert.Regexp(t, `(?m)^OK$`, stderr)

	// Every run had its own fresh directory (the helper checks it is empty), and
	// none is left behind.
	raw, err := os.ReadFile(log)
	require.NoError(t, err)
	dirs := strings.Fields(string(raw))
	require.Len(t, dirs, 3)
	assert.NotEqual(t, dirs[0], dirs[1])
	assert.NotEqual(t, dirs[1], dirs[2])
	for _, d := range dirs {
		assert.NoDirExists(t, d)
	}
}

func TestStartupProcessExits(t *testing.T) {
	t.Setenv(helperEnv, "exit")
	code, stdout, _ := runCLI(t, nil, startupArgs("--runs", "2")...)
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, stdout, "FAILED: process exited before it was ready: exit status 3")
	assert.Contains(t, stdout, "boom: cannot start", "the output of a failed run is shown")
	assert.True(t, strings.HasSuffix(stdout, "FAILED: 2 of 2 runs failed\n"), stdout)
	assert.NotRegexp(t, `(?m)^OK$`, stdout)
}

func TestStartupNeverReady(t *testing.T) {
	t.Setenv(helperEnv, "never")
	code, stdout, _ := runCLI(t, nil, startupArgs("--runs", "1", "--timeout", "300ms")...)
	assert.Equal(t, exitFailed, code)
	assert.Regexp(t, `FAILED: not ready within 300ms \(last: GET http://127\.0\.0\.1:\d+/readyz: 503 Service Unavailable\)`, stdout)
	assert.True(t, strings.HasSuffix(stdout, "FAILED: 1 of 1 runs failed\n"), stdout)
}

func TestStartupKillsWhatIgnoresSIGINT(t *testing.T) {
	t.Setenv(helperEnv, "ignore-sigint")
	code, stdout, _ := runCLI(t, nil, startupArgs("--runs", "1", "--stop-timeout", "100ms")...)
	assert.Equal(t, exitOK, code, "getting ready is what counts")
	assert.Contains(t, stdout, "ok (ignored SIGINT, killed)")
}
