package main

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sampleReport(errs ...int) *Report {
	rep := &Report{Server: "https://example", Namespace: "apichain-bench-x"}
	for i, e := range errs {
		rep.Results = append(rep.Results, Result{Operation: []string{opCreate, opGet, opUpdateConflict}[i%3],
			Count: 100, Errors: e, Conflicts: 50, Elapsed: time.Second, Latency: Summarize(msSeq(100 - e))})
	}
	return rep
}

func TestReportVerdict(t *testing.T) {
	tests := []struct {
		name     string
		rep      *Report
		wantLine string
		wantCode int
	}{
		{"all ok", sampleReport(0, 0, 0), "OK\n", exitOK},
		{"failures add up", sampleReport(1, 0, 2), "FAILED: 3 operations failed\n", exitFailed},
		{"interrupted is never ok", func() *Report { r := sampleReport(0); r.Interrupted = true; return r }(),
			"FAILED: 0 operations failed (run interrupted)\n", exitFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := table(tt.rep)
			assert.True(t, strings.HasSuffix(out, tt.wantLine), out)
			assert.Equal(t, tt.wantCode, tt.rep.ExitCode())
			if tt.wantCode != exitOK {
				assert.NotContains(t, out, "\nOK")
			}
		})
	}
}

func TestReportTable(t *testing.T) {
	rep := sampleReport(0, 0, 0)
	rep.Results[0].ErrorSamples = []ErrorSample{{Message: "boom", Count: 2}}
	out := table(rep)
	lines := strings.Split(out, "\n")
	assert.Regexp(t, `^OPERATION\s+COUNT\s+ERRORS\s+OPS/S\s+P50\(ms\)\s+P99\(ms\)\s+NOTES`, lines[1])
	assert.Regexp(t, `^create\s+100\s+0\s+100\.0\s+50\.00\s+99\.00`, lines[2])
	assert.Regexp(t, `^update-conflict\s+100\s+0\s+100\.0\s+50\.00\s+99\.00\s+conflicts=50 \(0\.50/op\)`, lines[4])
	assert.Contains(t, out, "create error (x2): boom")
}

func TestReportJSON(t *testing.T) {
	rep := sampleReport(0, 4, 0)
	var b strings.Builder
	require.NoError(t, rep.WriteJSON(&b))
	var got struct {
		Mode    string
		OK      bool
		Failed  int
		Results []struct {
			Operation      string
			Errors         int
			OpsPerSecond   float64                    `json:"ops_per_second"`
			ConflictsPerOp float64                    `json:"conflicts_per_op"`
			Latency        struct{ P50, P99 float64 } `json:"latency_ms"`
		}
	}
	require.NoError(t, json.Unmarshal([]byte(b.String()), &got))
	assert.Equal(t, "workload", got.Mode)
	assert.False(t, got.OK)
	assert.Equal(t, 4, got.Failed)
	require.Len(t, got.Results, 3)
	assert.Equal(t, "get", got.Results[1].Operation)
	assert.Equal(t, 4, got.Results[1].Errors)
	assert.InDelta(t, 96.0, got.Results[1].OpsPerSecond, 1e-9)
	assert.InDelta(t, 48.0, got.Results[1].Latency.P50, 1e-9)
	assert.InDelta(t, 0.5, got.Results[2].ConflictsPerOp, 1e-9)
}

func TestStartupReport(t *testing.T) {
	ms := time.Millisecond
	ok := &StartupReport{Command: []string{"srv"}, Runs: []StartupRun{{Ready: 30 * ms}, {Ready: 10 * ms}, {Ready: 20 * ms}, {Ready: 50 * ms}}}
	s := ok.Ready()
	assert.Equal(t, []time.Duration{25 * ms, 10 * ms, 50 * ms}, []time.Duration{s.Median, s.Min, s.Max})
	out := startupTable(ok)
	assert.Contains(t, out, "median 25.0 ms, min 10.0 ms, max 50.0 ms")
	assert.True(t, strings.HasSuffix(out, "\nOK\n"), out)
	assert.Equal(t, exitOK, ok.ExitCode())

	failed := &StartupReport{Command: []string{"srv"}, Runs: []StartupRun{{Ready: 10 * ms},
		{Err: errors.New("not ready within 1s"), OutputTail: "panic: boom\n"}}}
	out = startupTable(failed)
	assert.Contains(t, out, "FAILED: not ready within 1s")
	assert.Contains(t, out, "panic: boom")
	assert.Contains(t, out, "over 1 runs: median 10.0 ms", "the summary covers ready runs only")
	assert.True(t, strings.HasSuffix(out, "FAILED: 1 of 2 runs failed\n"), out)
	assert.NotContains(t, out, "\nOK")
	assert.Equal(t, exitFailed, failed.ExitCode())

	assert.Equal(t, exitFailed, (&StartupReport{}).ExitCode(), "no runs is not a success")
}

func startupTable(rep *StartupReport) string {
	var b strings.Builder
	rep.WriteTable(&b)
	return b.String()
}
