package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Result is the outcome of one workload phase.
type Result struct {
	Operation string
	// Count is the number of operations attempted (for watch: expected deliveries,
	// events × watchers).
	Count int
	// Errors is the number of operations that failed. Retried 409 Conflicts of the
	// update-conflict phase are not errors unless retrying gave up.
	Errors int
	// Conflicts is the number of 409 Conflicts that were retried (update-conflict).
	Conflicts int
	Elapsed   time.Duration
	// Latency is over the successful operations only.
	Latency Summary
	// ServerCPU is the CPU time the server's processes used during the phase (user and
	// system, with --cpu-pid-file; 0: not measured).
	ServerCPU    time.Duration
	Notes        []string
	ErrorSamples []ErrorSample
}

// ErrorSample is one distinct error message and how often it occurred.
type ErrorSample struct {
	Message string `json:"message"`
	Count   int    `json:"count"`
}

// CPUPerOp is the server's CPU time per successful operation (0: not measured).
func (r Result) CPUPerOp() time.Duration {
	if r.ServerCPU <= 0 || r.Count-r.Errors <= 0 {
		return 0
	}
	return r.ServerCPU / time.Duration(r.Count-r.Errors)
}

// Throughput is successful operations per second of the phase's wall time.
func (r Result) Throughput() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Count-r.Errors) / r.Elapsed.Seconds()
}

// ConflictsPerOp is the number of retried conflicts per attempted operation.
func (r Result) ConflictsPerOp() float64 {
	if r.Count == 0 {
		return 0
	}
	return float64(r.Conflicts) / float64(r.Count)
}

// Report is the outcome of a workload run.
type Report struct {
	Server    string
	Namespace string
	// Interrupted: the run was cut short (a signal); such a run is never OK.
	Interrupted bool
	Results     []Result
}

// Failed is the number of failed operations over all phases.
func (r *Report) Failed() int {
	n := 0
	for _, res := range r.Results {
		n += res.Errors
	}
	return n
}

// OK reports whether the run had no failed operation and ran to completion.
func (r *Report) OK() bool { return r.Failed() == 0 && !r.Interrupted }

// ExitCode is 0 for an OK run and exitFailed otherwise.
func (r *Report) ExitCode() int {
	if r.OK() {
		return 0
	}
	return exitFailed
}

// WriteTable prints the results table, any error samples and the verdict line.
func (r *Report) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "server: %s  namespace: %s\n", r.Server, r.Namespace)
	r.writeResults(w)
	r.writeVerdict(w)
}

// writeVerdict prints OK, or how many operations failed.
func (r *Report) writeVerdict(w io.Writer) {
	switch {
	case r.OK():
		fmt.Fprintln(w, "OK")
	case r.Interrupted:
		fmt.Fprintf(w, "FAILED: %d operations failed (run interrupted)\n", r.Failed())
	default:
		fmt.Fprintf(w, "FAILED: %d operations failed\n", r.Failed())
	}
}

// writeResults prints the results table and any error samples.
func (r *Report) writeResults(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "OPERATION\tCOUNT\tERRORS\tOPS/S\tP50(ms)\tP99(ms)\tNOTES")
	for _, res := range r.Results {
		notes := res.Notes
		if res.Operation == opUpdateConflict {
			notes = append([]string{fmt.Sprintf("conflicts=%d (%.2f/op)", res.Conflicts, res.ConflictsPerOp())}, notes...)
		}
		if res.ServerCPU > 0 {
			notes = append([]string{fmt.Sprintf("server CPU %.2f s (%.3f ms/op)", res.ServerCPU.Seconds(), ms(res.CPUPerOp()))}, notes...)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f\t%.2f\t%.2f\t%s\n", res.Operation, res.Count, res.Errors,
			res.Throughput(), ms(res.Latency.P50), ms(res.Latency.P99), strings.Join(notes, "; "))
	}
	tw.Flush()
	writeErrorSamples(w, r.Results)
}

func writeErrorSamples(w io.Writer, results []Result) {
	for _, res := range results {
		for _, s := range res.ErrorSamples {
			fmt.Fprintf(w, "  %s error (x%d): %s\n", res.Operation, s.Count, s.Message)
		}
	}
}

type jsonResult struct {
	Operation      string        `json:"operation"`
	Count          int           `json:"count"`
	Errors         int           `json:"errors"`
	Conflicts      int           `json:"conflicts,omitempty"`
	ConflictsPerOp float64       `json:"conflicts_per_op,omitempty"`
	ElapsedSeconds float64       `json:"elapsed_seconds"`
	OpsPerSecond   float64       `json:"ops_per_second"`
	Latency        jsonSummary   `json:"latency_ms"`
	ServerCPU      float64       `json:"server_cpu_seconds,omitempty"`
	CPUPerOp       float64       `json:"server_cpu_ms_per_op,omitempty"`
	Notes          []string      `json:"notes,omitempty"`
	ErrorSamples   []ErrorSample `json:"error_samples,omitempty"`
}

type jsonSummary struct {
	N      int     `json:"n"`
	Min    float64 `json:"min"`
	P50    float64 `json:"p50"`
	P99    float64 `json:"p99"`
	Median float64 `json:"median"`
	Mean   float64 `json:"mean"`
	Max    float64 `json:"max"`
}

func toJSONSummary(s Summary) jsonSummary {
	return jsonSummary{N: s.N, Min: ms(s.Min), P50: ms(s.P50), P99: ms(s.P99), Median: ms(s.Median), Mean: ms(s.Mean), Max: ms(s.Max)}
}

// WriteJSON prints the report as one JSON document.
func (r *Report) WriteJSON(w io.Writer) error { return writeIndentedJSON(w, r.jsonDoc()) }

func (r *Report) jsonDoc() any {
	out := struct {
		Mode        string       `json:"mode"`
		Server      string       `json:"server"`
		Namespace   string       `json:"namespace"`
		OK          bool         `json:"ok"`
		Failed      int          `json:"failed"`
		Interrupted bool         `json:"interrupted,omitempty"`
		Results     []jsonResult `json:"results"`
	}{Mode: "workload", Server: r.Server, Namespace: r.Namespace, OK: r.OK(), Failed: r.Failed(), Interrupted: r.Interrupted,
		Results: r.jsonResults()}
	return out
}

func (r *Report) jsonResults() []jsonResult {
	var out []jsonResult
	for _, res := range r.Results {
		out = append(out, jsonResult{
			Operation: res.Operation, Count: res.Count, Errors: res.Errors,
			Conflicts: res.Conflicts, ConflictsPerOp: res.ConflictsPerOp(),
			ElapsedSeconds: res.Elapsed.Seconds(), OpsPerSecond: res.Throughput(),
			Latency: toJSONSummary(res.Latency), ServerCPU: res.ServerCPU.Seconds(), CPUPerOp: ms(res.CPUPerOp()),
			Notes: res.Notes, ErrorSamples: res.ErrorSamples,
		})
	}
	return out
}

func writeIndentedJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// StartupRun is one launch of the command under test.
type StartupRun struct {
	// Ready is the time from exec to the first /readyz 200 (0 if never ready).
	Ready time.Duration
	// Stop is the time from SIGINT to exit.
	Stop time.Duration
	// Killed: the process ignored SIGINT and was killed.
	Killed bool
	// Exit is how the process ended (nil: status 0); informational only.
	Exit error
	Err  error
	// OutputTail is the end of the process's output, kept for a failed run.
	OutputTail string
}

// StartupReport is the outcome of the startup mode.
type StartupReport struct {
	Command     []string
	Runs        []StartupRun
	Interrupted bool
}

// Failed is the number of runs that never got ready (or failed otherwise).
func (r *StartupReport) Failed() int {
	n := 0
	for _, run := range r.Runs {
		if run.Err != nil {
			n++
		}
	}
	return n
}

func (r *StartupReport) OK() bool { return r.Failed() == 0 && !r.Interrupted && len(r.Runs) > 0 }

func (r *StartupReport) ExitCode() int {
	if r.OK() {
		return 0
	}
	return exitFailed
}

// Ready summarizes the ready times of the successful runs.
func (r *StartupReport) Ready() Summary {
	var ds []time.Duration
	for _, run := range r.Runs {
		if run.Err == nil {
			ds = append(ds, run.Ready)
		}
	}
	return Summarize(ds)
}

func (r *StartupReport) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "command: %s\n", strings.Join(r.Command, " "))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tREADY(ms)\tSTOP(ms)\tRESULT")
	for i, run := range r.Runs {
		result := "ok"
		if run.Err != nil {
			result = "FAILED: " + run.Err.Error()
		}
		if run.Killed {
			result += " (ignored SIGINT, killed)"
		} else if run.Exit != nil && run.Err == nil {
			result += " (exit: " + run.Exit.Error() + ")"
		}
		fmt.Fprintf(tw, "%d\t%.1f\t%.1f\t%s\n", i+1, ms(run.Ready), ms(run.Stop), result)
	}
	tw.Flush()
	for i, run := range r.Runs {
		if run.Err != nil && run.OutputTail != "" {
			fmt.Fprintf(w, "--- run %d output (tail) ---\n%s\n", i+1, strings.TrimRight(run.OutputTail, "\n"))
		}
	}
	s := r.Ready()
	if s.N > 0 {
		fmt.Fprintf(w, "startup-to-ready over %d runs: median %.1f ms, min %.1f ms, max %.1f ms\n", s.N, ms(s.Median), ms(s.Min), ms(s.Max))
	}
	switch {
	case r.OK():
		fmt.Fprintln(w, "OK")
	case r.Interrupted:
		fmt.Fprintf(w, "FAILED: %d of %d runs failed (interrupted)\n", r.Failed(), len(r.Runs))
	default:
		fmt.Fprintf(w, "FAILED: %d of %d runs failed\n", r.Failed(), len(r.Runs))
	}
}

func (r *StartupReport) WriteJSON(w io.Writer) error {
	type jsonRun struct {
		ReadyMs float64 `json:"ready_ms"`
		StopMs  float64 `json:"stop_ms"`
		Killed  bool    `json:"killed,omitempty"`
		Exit    string  `json:"exit,omitempty"`
		Error   string  `json:"error,omitempty"`
	}
	out := struct {
		Mode        string      `json:"mode"`
		Command     []string    `json:"command"`
		OK          bool        `json:"ok"`
		Failed      int         `json:"failed"`
		Interrupted bool        `json:"interrupted,omitempty"`
		Ready       jsonSummary `json:"ready_ms"`
		Runs        []jsonRun   `json:"runs"`
	}{Mode: "startup", Command: r.Command, OK: r.OK(), Failed: r.Failed(), Interrupted: r.Interrupted, Ready: toJSONSummary(r.Ready())}
	for _, run := range r.Runs {
		jr := jsonRun{ReadyMs: ms(run.Ready), StopMs: ms(run.Stop), Killed: run.Killed}
		if run.Err != nil {
			jr.Error = run.Err.Error()
		}
		if run.Exit != nil {
			jr.Exit = run.Exit.Error()
		}
		out.Runs = append(out.Runs, jr)
	}
	return writeIndentedJSON(w, out)
}
