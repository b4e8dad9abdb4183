package main

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// Comparison is one workload run against two servers, the baseline first.
type Comparison struct {
	Baseline, Subject *Report
}

// Ratio compares one operation on the two servers; every ratio above 1 means the subject did
// better: Throughput is the subject's ops/s over the baseline's, P50 and P99 the baseline's
// latency over the subject's, CPU the baseline server's CPU time per operation over the
// subject's (0: not measured on both).
type Ratio struct {
	Operation                 string
	Throughput, P50, P99, CPU float64
}

// Ratios pairs the operations both reports measured, in the subject's order.
func (c Comparison) Ratios() []Ratio {
	var out []Ratio
	for _, p := range c.pairs() {
		out = append(out, p.ratio())
	}
	return out
}

// pair is one operation's results on the baseline and on the subject.
type pair struct{ baseline, subject Result }

// pairs are the operations both reports measured, in the subject's order.
func (c Comparison) pairs() []pair {
	base := map[string]Result{}
	for _, r := range c.Baseline.Results {
		base[r.Operation] = r
	}
	var out []pair
	for _, s := range c.Subject.Results {
		if b, ok := base[s.Operation]; ok {
			out = append(out, pair{b, s})
		}
	}
	return out
}

func (p pair) ratio() Ratio {
	b, s := p.baseline, p.subject
	return Ratio{Operation: s.Operation, Throughput: ratio(s.Throughput(), b.Throughput()),
		P50: ratio(b.Latency.P50.Seconds(), s.Latency.P50.Seconds()), P99: ratio(b.Latency.P99.Seconds(), s.Latency.P99.Seconds()),
		CPU: ratio(b.CPUPerOp().Seconds(), s.CPUPerOp().Seconds())}
}

// ratio is a/b, 0 when either is not a measurement.
func ratio(a, b float64) float64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	return a / b
}

// OK reports whether both runs were.
func (c Comparison) OK() bool { return c.Baseline.OK() && c.Subject.OK() }

// WriteTable prints the ratio table after the two runs' own tables.
func (c Comparison) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "\n%s compared with %s (baseline); above 1 is better: throughput is its ops/s over the baseline's, latency the baseline's over its own, CPU/OP the baseline server's CPU per operation over its own (with --cpu-pid-file and --baseline-cpu-pid-file)\n",
		c.Subject.Server, c.Baseline.Server)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "OPERATION\tBASELINE OPS/S\tOPS/S\tTHROUGHPUT\tBASELINE P50/P99(ms)\tP50/P99(ms)\tP50\tP99\tCPU/OP")
	for _, p := range c.pairs() {
		b, s, r := p.baseline, p.subject, p.ratio()
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%s\t%.2f/%.2f\t%.2f/%.2f\t%s\t%s\t%s\n", r.Operation, b.Throughput(), s.Throughput(), times(r.Throughput),
			ms(b.Latency.P50), ms(b.Latency.P99), ms(s.Latency.P50), ms(s.Latency.P99), times(r.P50), times(r.P99), times(r.CPU))
	}
	tw.Flush()
	if !c.OK() {
		fmt.Fprintln(w, "FAILED: a run had failed operations; its figures are not comparable")
	}
}

func times(f float64) string {
	if f == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", f)
}

// WriteJSON prints both runs and the ratios as one document.
func (c Comparison) WriteJSON(w io.Writer) error {
	type jsonRatio struct {
		Operation  string  `json:"operation"`
		Throughput float64 `json:"throughput"`
		P50        float64 `json:"p50"`
		P99        float64 `json:"p99"`
		CPU        float64 `json:"cpu_per_op,omitempty"`
	}
	out := struct {
		Mode     string      `json:"mode"`
		OK       bool        `json:"ok"`
		Baseline any         `json:"baseline"`
		Subject  any         `json:"subject"`
		Ratios   []jsonRatio `json:"ratios"`
	}{Mode: "comparison", OK: c.OK(), Baseline: c.Baseline.jsonDoc(), Subject: c.Subject.jsonDoc()}
	for _, r := range c.Ratios() {
		out.Ratios = append(out.Ratios, jsonRatio(r))
	}
	return writeIndentedJSON(w, out)
}
