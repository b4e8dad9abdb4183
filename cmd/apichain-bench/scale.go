package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// Scale phases (operations) and memory readings, as reported.
const (
	opListJSON      = "list-json"
	opListProtobuf  = "list-protobuf"
	opListSelector  = "list-selector"
	opListFirstPage = "list-first-page"
	opRestart       = "restart"

	rssBefore       = "rss-before"
	rssAfterCreate  = "rss-after-create"
	rssAfterLists   = "rss-after-lists"
	rssAfterRestart = "rss-after-restart"

	// shardLabel puts every object in one of scaleShards shards, for the selector lists.
	shardLabel  = "apichain-bench/shard"
	scaleShards = 10
)

// scaleConfig is the scale benchmark; see the flags in main.go.
type scaleConfig struct {
	Concurrency int
	Objects     int
	ObjectSize  int
	Lists       int
	PageSize    int64
	OpTimeout   time.Duration
	Keep        bool
	// PIDFiles hold the PIDs (whitespace-separated, read again at every reading) of the
	// processes whose resident memory is summed: the server and its etcd.
	PIDFiles []string
	// StopCommand and StartCommand (shell commands) restart the server: the restart time is
	// from StartCommand's exec to the first /readyz 200, Restarts times.
	StopCommand, StartCommand string
	Restarts                  int
	RestartTimeout            time.Duration
}

func defaultScaleConfig() scaleConfig {
	return scaleConfig{Concurrency: 16, Objects: 20000, ObjectSize: 1024, Lists: 5, PageSize: 500,
		OpTimeout: 2 * time.Minute, Restarts: 1, RestartTimeout: 5 * time.Minute}
}

func (c scaleConfig) validate() error {
	var errs []error
	if c.Concurrency < 1 || c.Objects < 1 || c.Lists < 1 || c.PageSize < 1 {
		errs = append(errs, errors.New("--concurrency, --objects, --lists and --list-page-size must be at least 1"))
	}
	if c.ObjectSize < 0 || c.Restarts < 0 {
		errs = append(errs, errors.New("--object-size and --restarts must not be negative"))
	}
	if (c.StopCommand == "") != (c.StartCommand == "") {
		errs = append(errs, errors.New("--stop-command and --start-command go together"))
	}
	if c.OpTimeout <= 0 || c.RestartTimeout <= 0 {
		errs = append(errs, errors.New("--op-timeout and --restart-timeout must be positive"))
	}
	return errors.Join(errs...)
}

// scaleTarget is the server a scale run measures: typed clients for the writes, and raw
// lists, timed without the client's decoding of the items (a 20,000-item list takes the
// client longer to decode than the server to send).
type scaleTarget struct {
	cs         kubernetes.Interface
	host       string
	kubeconfig string
	// listRaw lists the namespace's ConfigMaps in JSON or protobuf, returning the body.
	listRaw func(ctx context.Context, namespace string, opts metav1.ListOptions, protobuf bool) ([]byte, error)
}

// newScaleTarget connects to the server of a kubeconfig.
func newScaleTarget(kubeconfig string) (*scaleTarget, error) {
	cfg, err := restConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	clients := map[bool]rest.Interface{}
	for _, protobuf := range []bool{false, true} {
		c := rest.CopyConfig(cfg)
		c.APIPath, c.GroupVersion = "/api", &corev1.SchemeGroupVersion
		c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
		c.AcceptContentTypes = runtime.ContentTypeJSON
		if protobuf {
			c.AcceptContentTypes = runtime.ContentTypeProtobuf
		}
		rc, err := rest.RESTClientFor(c)
		if err != nil {
			return nil, err
		}
		clients[protobuf] = rc
	}
	return &scaleTarget{cs: cs, host: cfg.Host, kubeconfig: kubeconfig,
		listRaw: func(ctx context.Context, namespace string, opts metav1.ListOptions, protobuf bool) ([]byte, error) {
			return clients[protobuf].Get().Namespace(namespace).Resource("configmaps").
				VersionedParams(&opts, scheme.ParameterCodec).DoRaw(ctx)
		}}, nil
}

// scaleCommand is `apichain-bench scale`.
func scaleCommand(ctx context.Context, newTarget func(string) (*scaleTarget, error), logf func(string, ...any),
	tableOut func() io.Writer, stdout io.Writer, jsonOut *bool, code *int) *cobra.Command {
	cfg := defaultScaleConfig()
	var base scaleConfig // only the baseline's own processes and commands; the rest is cfg's
	var kubeconfig, baselineKubeconfig string
	cmd := &cobra.Command{
		Use:   "scale --kubeconfig FILE [flags]",
		Short: "Measure how lists, memory and restarts grow with the number of objects",
		Long: `Creates --objects ConfigMaps of --object-size bytes in a fresh namespace (each labelled
with one of 10 shards), then times --lists times each, one at a time: a full list in JSON,
a full list in protobuf (both unpaginated, as informers' first lists are when the server
serves them from its cache), a list of one shard by label selector (a tenth), and the first
page of --list-page-size. Lists are timed to their last byte, without the client's
decoding of the items; each is then decoded and checked to hold every object.

With --rss-pid-file (repeatable; each file holds PIDs, read again at every reading), the
resident memory of those processes (the server and its etcd) is summed before and after
the creates, after the lists and after the restart, and the growth per object printed.

With --stop-command and --start-command (shell commands), the server is restarted
--restarts times with the objects in etcd: the restart time is from the start command's
exec to the first /readyz 200 with --kubeconfig's credentials (the start command may
return at once, leaving the server in the background, or once it serves).

With --baseline-kubeconfig (and --baseline-rss-pid-file, --baseline-stop-command,
--baseline-start-command), the same run goes against that server first, and a table of
ratios follows. Example for an apichain all-in-one and kube-apiserver in docs/performance.md.`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if kubeconfig == "" {
				return errors.New("--kubeconfig is required")
			}
			baseCfg := cfg
			baseCfg.PIDFiles, baseCfg.StopCommand, baseCfg.StartCommand = base.PIDFiles, base.StopCommand, base.StartCommand
			if err := errors.Join(cfg.validate(), baseCfg.validate()); err != nil {
				return err
			}
			run := func(kubeconfig string, cfg scaleConfig) (*ScaleReport, error) {
				t, err := newTarget(kubeconfig)
				if err != nil {
					return nil, err
				}
				rep, err := runScale(ctx, t, cfg, logf)
				if err != nil {
					return nil, err
				}
				rep.WriteTable(tableOut())
				return rep, nil
			}
			var baseline *ScaleReport
			if baselineKubeconfig != "" {
				var err error
				if baseline, err = run(baselineKubeconfig, baseCfg); err != nil {
					return fmt.Errorf("baseline: %w", err)
				}
			}
			rep, err := run(kubeconfig, cfg)
			if err != nil {
				return err
			}
			if !rep.OK() {
				*code = exitFailed
			}
			if baseline == nil {
				if *jsonOut {
					return writeIndentedJSON(stdout, rep.jsonDoc())
				}
				return nil
			}
			cmp := ScaleComparison{Baseline: baseline, Subject: rep}
			cmp.WriteTable(tableOut())
			if !cmp.OK() {
				*code = exitFailed
			}
			if *jsonOut {
				return cmp.WriteJSON(stdout)
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&kubeconfig, "kubeconfig", "", "Kubeconfig of the server to measure (required).")
	fs.StringVar(&baselineKubeconfig, "baseline-kubeconfig", "", "Kubeconfig of a server to compare with, measured first.")
	fs.IntVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "Concurrent creates.")
	fs.IntVar(&cfg.Objects, "objects", cfg.Objects, "ConfigMaps to create.")
	fs.IntVar(&cfg.ObjectSize, "object-size", cfg.ObjectSize, "Bytes of each ConfigMap's data.")
	fs.IntVar(&cfg.Lists, "lists", cfg.Lists, "Times each kind of list is timed.")
	fs.Int64Var(&cfg.PageSize, "list-page-size", cfg.PageSize, "Limit of the first-page list.")
	fs.DurationVar(&cfg.OpTimeout, "op-timeout", cfg.OpTimeout, "Timeout of each request.")
	fs.BoolVar(&cfg.Keep, "keep", false, "Keep the namespace instead of deleting it.")
	fs.IntVar(&cfg.Restarts, "restarts", cfg.Restarts, "Restarts timed (with --start-command).")
	fs.DurationVar(&cfg.RestartTimeout, "restart-timeout", cfg.RestartTimeout, "Time allowed from the start command to ready.")
	fs.StringArrayVar(&cfg.PIDFiles, "rss-pid-file", nil, "File holding the PIDs whose resident memory is summed (repeatable).")
	fs.StringVar(&cfg.StopCommand, "stop-command", "", "Shell command that stops the server and returns once it has stopped.")
	fs.StringVar(&cfg.StartCommand, "start-command", "", "Shell command that starts the server again.")
	fs.StringArrayVar(&base.PIDFiles, "baseline-rss-pid-file", nil, "--rss-pid-file for the baseline server.")
	fs.StringVar(&base.StopCommand, "baseline-stop-command", "", "--stop-command for the baseline server.")
	fs.StringVar(&base.StartCommand, "baseline-start-command", "", "--start-command for the baseline server.")
	return cmd
}

// listItems decodes a raw ConfigMap list.
func listItems(body []byte) (*corev1.ConfigMapList, error) {
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, &corev1.ConfigMapList{})
	if err != nil {
		return nil, err
	}
	l, ok := obj.(*corev1.ConfigMapList)
	if !ok {
		return nil, fmt.Errorf("a list decoded as %T", obj)
	}
	return l, nil
}

// Reading is one resident-memory reading of the measured processes.
type Reading struct {
	Name  string
	Bytes int64
}

// ScaleReport is the outcome of a scale run.
type ScaleReport struct {
	Report
	Objects, Size int
	Memory        []Reading
}

// BytesPerObject is the growth of resident memory from before the creates to after them,
// per object (0 without both readings).
func (r *ScaleReport) BytesPerObject() int64 {
	before, after := r.reading(rssBefore), r.reading(rssAfterCreate)
	if before == 0 || after == 0 || r.Objects == 0 {
		return 0
	}
	return (after - before) / int64(r.Objects)
}

func (r *ScaleReport) reading(name string) int64 {
	for _, m := range r.Memory {
		if m.Name == name {
			return m.Bytes
		}
	}
	return 0
}

// runScale creates cfg.Objects ConfigMaps of cfg.ObjectSize bytes in a fresh namespace, then
// measures full lists (JSON and protobuf, unpaginated), a label-selected tenth and a first
// page, the resident memory of the given processes after each step, and the restart to
// ready with the objects in etcd.
func runScale(ctx context.Context, t *scaleTarget, cfg scaleConfig, logf func(string, ...any)) (*ScaleReport, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	w := &workload{cs: t.cs, logf: logf, cfg: workloadConfig{OpTimeout: cfg.OpTimeout, Keep: cfg.Keep}}
	if err := w.createNamespace(ctx); err != nil {
		return nil, err
	}
	defer w.cleanup()
	rep := &ScaleReport{Report: Report{Server: t.host, Namespace: w.ns}, Objects: cfg.Objects, Size: cfg.ObjectSize}
	read := func(name string) {
		if len(cfg.PIDFiles) == 0 {
			return
		}
		n, err := residentBytes(cfg.PIDFiles)
		if err != nil {
			logf("WARNING: %s: %v", name, err)
			return
		}
		logf("%s: %d MiB", name, n>>20)
		rep.Memory = append(rep.Memory, Reading{Name: name, Bytes: n})
	}
	phase := func(res Result) {
		logf("phase %s: %d ops, %d errors, p50 %.1f ms", res.Operation, res.Count, res.Errors, ms(res.Latency.P50))
		rep.Results = append(rep.Results, res)
	}
	r := runner{concurrency: cfg.Concurrency, opTimeout: cfg.OpTimeout}
	one := runner{concurrency: 1, opTimeout: cfg.OpTimeout}
	data := strings.Repeat("x", cfg.ObjectSize)

	read(rssBefore)
	logf("phase create: %d objects of %d bytes ...", cfg.Objects, cfg.ObjectSize)
	phase(r.run(ctx, opCreate, cfg.Objects, func(ctx context.Context, i int) error {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: objectName(i), Labels: map[string]string{shardLabel: strconv.Itoa(i % scaleShards)}},
			Data:       map[string]string{"payload": data},
		}
		_, err := t.cs.CoreV1().ConfigMaps(w.ns).Create(ctx, cm, metav1.CreateOptions{})
		return err
	}))
	created := rep.Results[0].Count - rep.Results[0].Errors
	read(rssAfterCreate)

	// A list must hold every object created (a create that failed may have happened too),
	// besides the namespace's own (kube-root-ca.crt).
	check := func(body []byte, want, max int, limit int64) error {
		l, err := listItems(body)
		if err != nil {
			return err
		}
		n := 0
		for _, cm := range l.Items {
			if _, ok := cm.Labels[shardLabel]; ok {
				n++
			}
		}
		switch {
		case limit > 0 && int64(len(l.Items)) != limit && n < want: // neither full nor all
			return fmt.Errorf("a page of %d has %d items", limit, len(l.Items))
		case limit == 0 && (n < want || n > max):
			return fmt.Errorf("the list has %d items, want %d", n, want)
		}
		return nil
	}
	lists := []struct {
		op       string
		protobuf bool
		opts     metav1.ListOptions
		want     int
	}{
		{opListJSON, false, metav1.ListOptions{}, created},
		{opListProtobuf, true, metav1.ListOptions{}, created},
		{opListSelector, false, metav1.ListOptions{LabelSelector: shardLabel + "=0"}, created / scaleShards},
		{opListFirstPage, false, metav1.ListOptions{Limit: cfg.PageSize}, created},
	}
	for _, l := range lists {
		if ctx.Err() != nil {
			break
		}
		var bodies [][]byte
		res := one.run(ctx, l.op, cfg.Lists, func(ctx context.Context, _ int) error {
			body, err := t.listRaw(ctx, w.ns, l.opts, l.protobuf)
			if err == nil {
				bodies = append(bodies, body)
			}
			return err
		})
		// Checked after the timing, each, so that a wrong list fails the run.
		for _, body := range bodies {
			most := cfg.Objects
			if l.opts.LabelSelector != "" {
				most = (cfg.Objects + scaleShards - 1) / scaleShards
			}
			if err := check(body, l.want, most, l.opts.Limit); err != nil {
				res.Errors++
				res.ErrorSamples = append(res.ErrorSamples, ErrorSample{Message: err.Error(), Count: 1})
			}
		}
		if len(bodies) > 0 {
			res.Notes = append(res.Notes, fmt.Sprintf("%d KiB", len(bodies[0])>>10))
		}
		bodies = nil
		phase(res)
	}
	read(rssAfterLists)

	if cfg.StartCommand != "" && cfg.Restarts > 0 && ctx.Err() == nil {
		res := Result{Operation: opRestart, Count: cfg.Restarts}
		var times []time.Duration
		var samples errorSamples
		begin := time.Now()
		for range cfg.Restarts {
			d, err := restart(ctx, cfg, t.kubeconfig)
			if err != nil {
				res.Errors++
				samples.add(err)
				continue
			}
			times = append(times, d)
		}
		res.Elapsed, res.Latency, res.ErrorSamples = time.Since(begin), Summarize(times), samples.list()
		phase(res)
		read(rssAfterRestart)
	}
	rep.Interrupted = ctx.Err() != nil
	return rep, nil
}

// restart runs the stop command to its end, then the start command, and returns the time
// from the start command's exec to the first /readyz 200.
func restart(ctx context.Context, cfg scaleConfig, kubeconfig string) (time.Duration, error) {
	shell := func(command string) error {
		out, err := exec.CommandContext(ctx, "sh", "-c", command).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%q: %v: %s", command, err, bytes.TrimSpace(out))
		}
		return nil
	}
	if err := shell(cfg.StopCommand); err != nil {
		return 0, fmt.Errorf("stop: %w", err)
	}
	begin := time.Now()
	if err := shell(cfg.StartCommand); err != nil {
		return 0, fmt.Errorf("start: %w", err)
	}
	probe := &readyzProbe{}
	defer probe.close()
	return waitReady(ctx, probe, kubeconfig, begin,
		startupConfig{Timeout: cfg.RestartTimeout, PollInterval: 5 * time.Millisecond}, nil, nil)
}

// residentBytes sums the resident memory (VmRSS) of the processes whose PIDs the files hold.
func residentBytes(pidFiles []string) (int64, error) { return sumOverPIDs(pidFiles, processRSS) }

// sumOverPIDs sums read over the PIDs the files hold, read again at every call (a restarted
// server has new ones).
func sumOverPIDs(pidFiles []string, read func(pid string) (int64, error)) (int64, error) {
	var total int64
	for _, f := range pidFiles {
		raw, err := os.ReadFile(f)
		if err != nil {
			return 0, err
		}
		pids := strings.Fields(string(raw))
		if len(pids) == 0 {
			return 0, fmt.Errorf("%s holds no PID", f)
		}
		for _, pid := range pids {
			if _, err := strconv.Atoi(pid); err != nil {
				return 0, fmt.Errorf("%q is not a PID", pid)
			}
			n, err := read(pid)
			if err != nil {
				return 0, err
			}
			total += n
		}
	}
	return total, nil
}

// processRSS is a process's VmRSS from /proc.
func processRSS(pid string) (int64, error) {
	status, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("process %s: VmRSS %q", pid, v)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("process %s has no VmRSS", pid)
}

// WriteTable prints the phases and the memory readings.
func (r *ScaleReport) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "server: %s  namespace: %s  objects: %d of %d bytes\n", r.Server, r.Namespace, r.Objects, r.Size)
	r.writeResults(w)
	if len(r.Memory) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "MEMORY\tRSS(MiB)")
		for _, m := range r.Memory {
			fmt.Fprintf(tw, "%s\t%.1f\n", m.Name, mib(m.Bytes))
		}
		tw.Flush()
		if b := r.BytesPerObject(); b > 0 {
			fmt.Fprintf(w, "resident bytes per object (after the creates): %d\n", b)
		}
	}
	r.writeVerdict(w)
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func (r *ScaleReport) jsonDoc() any {
	type jsonReading struct {
		Name  string `json:"name"`
		Bytes int64  `json:"bytes"`
	}
	out := struct {
		Mode           string        `json:"mode"`
		Server         string        `json:"server"`
		Namespace      string        `json:"namespace"`
		Objects        int           `json:"objects"`
		ObjectSize     int           `json:"object_size"`
		OK             bool          `json:"ok"`
		Results        []jsonResult  `json:"results"`
		Memory         []jsonReading `json:"memory,omitempty"`
		BytesPerObject int64         `json:"bytes_per_object,omitempty"`
	}{Mode: "scale", Server: r.Server, Namespace: r.Namespace, Objects: r.Objects, ObjectSize: r.Size, OK: r.OK(),
		Results: r.jsonResults(), BytesPerObject: r.BytesPerObject()}
	for _, m := range r.Memory {
		out.Memory = append(out.Memory, jsonReading(m))
	}
	return out
}

// ScaleComparison is one scale run against two servers, the baseline first.
type ScaleComparison struct{ Baseline, Subject *ScaleReport }

func (c ScaleComparison) OK() bool { return c.Baseline.OK() && c.Subject.OK() }

// WriteTable prints the latency ratios and the memory ratios (above 1: the subject did
// better, as in Comparison).
func (c ScaleComparison) WriteTable(w io.Writer) {
	Comparison{Baseline: &c.Baseline.Report, Subject: &c.Subject.Report}.WriteTable(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MEMORY\tBASELINE RSS(MiB)\tRSS(MiB)\tSUBJECT/BASELINE")
	for _, m := range c.Subject.Memory {
		if b := c.Baseline.reading(m.Name); b > 0 {
			fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.2f\n", m.Name, mib(b), mib(m.Bytes), float64(m.Bytes)/float64(b))
		}
	}
	tw.Flush()
}

func (c ScaleComparison) WriteJSON(w io.Writer) error {
	return writeIndentedJSON(w, struct {
		Mode     string `json:"mode"`
		OK       bool   `json:"ok"`
		Baseline any    `json:"baseline"`
		Subject  any    `json:"subject"`
	}{"scale-comparison", c.OK(), c.Baseline.jsonDoc(), c.Subject.jsonDoc()})
}
