// Command apichain-bench measures a Kubernetes-compatible API server: a fixed
// client-go workload against any server (default), or the time from exec to the first
// /readyz 200 of a server command (startup).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Exit codes.
const (
	exitOK     = 0
	exitFailed = 1 // the benchmark ran, and operations (or startup runs) failed
	exitError  = 2 // the benchmark could not run: bad usage, no server, no namespace
)

// clientFactory makes the clientset for a kubeconfig and names the server; tests
// replace it with a fake clientset.
type clientFactory func(kubeconfig string) (kubernetes.Interface, string, error)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // a second signal kills the process the default way
	}()
	os.Exit(execute(ctx, os.Args[1:], os.Stdout, os.Stderr, newClientset))
}

// restConfig is the client configuration of a kubeconfig, without client-side rate limits.
func restConfig(kubeconfig string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS = -1 // no client-side rate limit
	cfg.UserAgent = "apichain-bench"
	return cfg, nil
}

func newClientset(kubeconfig string) (kubernetes.Interface, string, error) {
	cfg, err := restConfig(kubeconfig)
	if err != nil {
		return nil, "", err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, "", err
	}
	return cs, cfg.Host, nil
}

// execute runs the command line and returns the process exit code.
func execute(ctx context.Context, args []string, stdout, stderr io.Writer, newClient clientFactory) int {
	return executeWith(ctx, args, stdout, stderr, newClient, newScaleTarget)
}

// executeWith is execute with the scale benchmark's connection made by newTarget (tests
// pass a fake server's).
func executeWith(ctx context.Context, args []string, stdout, stderr io.Writer, newClient clientFactory, newTarget func(string) (*scaleTarget, error)) int {
	code := exitOK
	var jsonOut bool
	logf := func(format string, a ...any) { fmt.Fprintf(stderr, "apichain-bench: "+format+"\n", a...) }
	// With --json, stdout carries only the JSON document; the table goes to stderr.
	tableOut := func() io.Writer {
		if jsonOut {
			return stderr
		}
		return stdout
	}

	cfg := defaultWorkloadConfig()
	var kubeconfig, baselineKubeconfig string
	var cpuPIDFiles, baselineCPUPIDFiles []string
	var conflictRetries int
	root := &cobra.Command{
		Use:   "apichain-bench --kubeconfig FILE [flags]",
		Short: "Benchmark a Kubernetes-compatible API server",
		Long: `Runs a fixed workload against the server of --kubeconfig, in a fresh namespace
apichain-bench-<random> (deleted at the end unless --keep): create --objects ConfigMaps,
get them, list them (pages of 500) --lists times, read-modify-write --updates increments
on --conflict-objects objects from every worker (409 Conflicts are retried and counted,
not failures), and watch fan-out (--watchers watches, then --watch-events objects created
one by one; a watch latency is from the start of the create call to one watcher
receiving the ADDED event, over all event x watcher deliveries).

Prints operation, count, errors, throughput (successful ops/s) and p50/p99 latency (of
successful ops). Exits 1 with "FAILED: n operations failed" if any operation failed
(including lists that miss objects and lost increments), 2 if it could not run.

With --baseline-kubeconfig, the workload runs against that server first, then against
--kubeconfig's, and a table gives each operation's throughput and latency ratios (above 1:
--kubeconfig's server did better).

With --cpu-pid-file (and --baseline-cpu-pid-file; repeatable, each file holds PIDs, read
again at every reading), each phase also reports the CPU time the server's processes used
during it, and its CPU per successful operation; the comparison's CPU/OP is the baseline's
over the subject's.`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if kubeconfig == "" {
				return errors.New("--kubeconfig is required")
			}
			cfg.ConflictBackoff.Steps = conflictRetries
			err := cfg.validate()
			if err != nil {
				return err
			}
			// Both servers' PID files are read before either run, so a wrong one fails at once.
			for _, files := range [][]string{baselineCPUPIDFiles, cpuPIDFiles} {
				if _, err := serverCPU(files); err != nil {
					return fmt.Errorf("server CPU: %w", err)
				}
			}
			run := func(kubeconfig string, pidFiles []string) (*Report, error) {
				cs, host, err := newClient(kubeconfig)
				if err != nil {
					return nil, err
				}
				cfg := cfg
				cfg.CPUPIDFiles = pidFiles
				rep, err := runWorkload(ctx, cs, cfg, logf)
				if err != nil {
					return nil, err
				}
				rep.Server = host
				rep.WriteTable(tableOut())
				return rep, nil
			}
			var baseline *Report
			if baselineKubeconfig != "" {
				if baseline, err = run(baselineKubeconfig, baselineCPUPIDFiles); err != nil {
					return fmt.Errorf("baseline: %w", err)
				}
			}
			rep, err := run(kubeconfig, cpuPIDFiles)
			if err != nil {
				return err
			}
			code = rep.ExitCode()
			if baseline == nil {
				if jsonOut {
					return rep.WriteJSON(stdout)
				}
				return nil
			}
			cmp := Comparison{Baseline: baseline, Subject: rep}
			cmp.WriteTable(tableOut())
			if !cmp.OK() {
				code = exitFailed
			}
			if jsonOut {
				return cmp.WriteJSON(stdout)
			}
			return nil
		},
	}
	root.PersistentFlags().BoolVar(&jsonOut, "json", false, "Also print the results as JSON on stdout (the table then goes to stderr).")
	fs := root.Flags()
	fs.StringVar(&kubeconfig, "kubeconfig", "", "Kubeconfig of the server to benchmark (required).")
	fs.StringVar(&baselineKubeconfig, "baseline-kubeconfig", "", "Kubeconfig of a server to compare with (a kube-apiserver, say): the same workload runs against it first, "+
		"then against --kubeconfig's, and a table of ratios follows.")
	fs.IntVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "Concurrent workers per phase.")
	fs.IntVar(&cfg.Objects, "objects", cfg.Objects, "ConfigMaps to create.")
	fs.IntVar(&cfg.Gets, "gets", cfg.Gets, "Gets (0: each object once).")
	fs.IntVar(&cfg.Lists, "lists", cfg.Lists, "Full (paginated) lists of all objects.")
	fs.Int64Var(&cfg.ListPageSize, "list-page-size", cfg.ListPageSize, "Limit of each list page.")
	fs.IntVar(&cfg.Updates, "updates", cfg.Updates, "Read-modify-write updates in the update-conflict phase.")
	fs.IntVar(&cfg.ConflictObjects, "conflict-objects", cfg.ConflictObjects, "Objects the update-conflict workers contend on.")
	fs.IntVar(&conflictRetries, "conflict-retries", cfg.ConflictBackoff.Steps, "Attempts of one update before it gives up on conflicts (a failure).")
	fs.IntVar(&cfg.Watchers, "watchers", cfg.Watchers, "Concurrent watches in the watch phase.")
	fs.IntVar(&cfg.WatchEvents, "watch-events", cfg.WatchEvents, "Objects created one by one while watched.")
	fs.DurationVar(&cfg.WatchTimeout, "watch-timeout", cfg.WatchTimeout, "How long after the last create to wait for watch deliveries.")
	fs.DurationVar(&cfg.OpTimeout, "op-timeout", cfg.OpTimeout, "Timeout of each request.")
	fs.BoolVar(&cfg.Keep, "keep", false, "Keep the namespace instead of deleting it.")
	fs.StringArrayVar(&cpuPIDFiles, "cpu-pid-file", nil, "File holding PIDs of the server's processes, whose CPU time (from /proc) each phase reports (repeatable).")
	fs.StringArrayVar(&baselineCPUPIDFiles, "baseline-cpu-pid-file", nil, "--cpu-pid-file for the baseline server.")

	sc := startupConfig{Runs: 5, Timeout: 60 * time.Second, PollInterval: 5 * time.Millisecond, StopTimeout: 10 * time.Second}
	startup := &cobra.Command{
		Use:   "startup --readyz-kubeconfig PATH [--runs N] -- COMMAND [ARGS...]",
		Short: "Measure the time from exec to the first /readyz 200 of a server command",
		Long: `Launches COMMAND --runs times, one after the other. In every run, {{dir}} in ARGS and in
--readyz-kubeconfig is replaced by a fresh temporary directory. The time from exec to the
first 200 of GET /readyz (with the credentials of the kubeconfig, polled every
--poll-interval) is the startup time; the process is then stopped with SIGINT (SIGKILL
after --stop-timeout). Reports median/min/max; a run that is not ready within --timeout
fails (exit 1).

Example:
  apichain-bench startup --runs 10 --readyz-kubeconfig '{{dir}}/admin.kubeconfig' -- \
    ./apichain --data-dir '{{dir}}' --secure-port 0 --log-level error`,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 && cmd.ArgsLenAtDash() != 0 {
				return fmt.Errorf("the command must follow --, got %q before it", args)
			}
			sc.Command = args
			rep, err := runStartup(ctx, sc, logf)
			if err != nil {
				return err
			}
			rep.WriteTable(tableOut())
			if jsonOut {
				if err := rep.WriteJSON(stdout); err != nil {
					return err
				}
			}
			code = rep.ExitCode()
			return nil
		},
	}
	sfs := startup.Flags()
	sfs.IntVar(&sc.Runs, "runs", sc.Runs, "Number of launches.")
	sfs.StringVar(&sc.Kubeconfig, "readyz-kubeconfig", "", "Kubeconfig to probe /readyz with; may contain {{dir}} (required).")
	sfs.DurationVar(&sc.Timeout, "timeout", sc.Timeout, "Time allowed from exec to ready; a slower run fails.")
	sfs.DurationVar(&sc.PollInterval, "poll-interval", sc.PollInterval, "Interval between /readyz polls.")
	sfs.DurationVar(&sc.StopTimeout, "stop-timeout", sc.StopTimeout, "Time allowed to exit after SIGINT before SIGKILL.")
	root.AddCommand(startup)
	root.AddCommand(scaleCommand(ctx, newTarget, logf, tableOut, stdout, &jsonOut, &code))

	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(stderr, "apichain-bench: error: %v\n", err)
		return exitError
	}
	return code
}
