package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// dirPlaceholder in the command's arguments and in the kubeconfig path is replaced by
// a fresh directory for every run.
const dirPlaceholder = "{{dir}}"

// outputTailBytes is how much of a failed run's output the report shows.
const outputTailBytes = 4 << 10

type startupConfig struct {
	Runs int
	// Kubeconfig is the path (may contain {{dir}}) of the kubeconfig to probe /readyz with.
	Kubeconfig   string
	Timeout      time.Duration
	PollInterval time.Duration
	// StopTimeout is how long to wait after SIGINT before SIGKILL.
	StopTimeout time.Duration
	Command     []string
}

func (c startupConfig) validate() error {
	var errs []error
	if c.Runs < 1 {
		errs = append(errs, fmt.Errorf("--runs must be at least 1, got %d", c.Runs))
	}
	if c.Kubeconfig == "" {
		errs = append(errs, errors.New("--readyz-kubeconfig is required"))
	}
	if len(c.Command) == 0 {
		errs = append(errs, errors.New("no command: give it after --, e.g. startup --readyz-kubeconfig '{{dir}}/admin.kubeconfig' -- ./apichain --data-dir '{{dir}}'"))
	}
	if c.Timeout <= 0 || c.PollInterval <= 0 || c.StopTimeout <= 0 {
		errs = append(errs, errors.New("--timeout, --poll-interval and --stop-timeout must be positive"))
	}
	return errors.Join(errs...)
}

// runStartup launches the command cfg.Runs times, one after the other, and measures
// the time from exec to the first /readyz 200. An error means nothing could be run
// (bad configuration); a run that fails is in the report.
func runStartup(ctx context.Context, cfg startupConfig, logf func(string, ...any)) (*StartupReport, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(cfg.Command, func(a string) bool { return strings.Contains(a, dirPlaceholder) }) {
		logf("WARNING: the command has no %s argument: the runs do not start from a fresh data directory", dirPlaceholder)
	}
	rep := &StartupReport{Command: cfg.Command}
	for i := range cfg.Runs {
		if ctx.Err() != nil {
			break
		}
		run := startupOnce(ctx, cfg)
		if run.Err != nil {
			logf("run %d/%d: FAILED: %v", i+1, cfg.Runs, run.Err)
		} else {
			logf("run %d/%d: ready in %s, stopped in %s", i+1, cfg.Runs, run.Ready.Round(time.Microsecond), run.Stop.Round(time.Microsecond))
		}
		rep.Runs = append(rep.Runs, run)
	}
	rep.Interrupted = ctx.Err() != nil
	return rep, nil
}

func startupOnce(ctx context.Context, cfg startupConfig) (run StartupRun) {
	parent, err := os.MkdirTemp("", "apichain-bench-startup-")
	if err != nil {
		return StartupRun{Err: err}
	}
	defer os.RemoveAll(parent)
	dir := filepath.Join(parent, "data")
	if err := os.Mkdir(dir, 0o700); err != nil {
		return StartupRun{Err: err}
	}
	argv := make([]string, len(cfg.Command))
	for i, a := range cfg.Command {
		argv[i] = strings.ReplaceAll(a, dirPlaceholder, dir)
	}
	kubeconfig := strings.ReplaceAll(cfg.Kubeconfig, dirPlaceholder, dir)

	// The output goes to a file, not a pipe: no copying goroutine that a left-over
	// grandchild could keep Wait from returning.
	logPath := filepath.Join(parent, "output.log")
	out, err := os.Create(logPath)
	if err != nil {
		return StartupRun{Err: err}
	}
	defer out.Close()
	defer func() {
		if run.Err != nil {
			run.OutputTail = fileTail(logPath, outputTailBytes)
		}
	}()

	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = out, out
	setProcessGroup(cmd)
	begin := time.Now()
	if err := cmd.Start(); err != nil {
		return StartupRun{Err: err}
	}
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()

	probe := &readyzProbe{}
	defer probe.close()
	run.Ready, run.Err = waitReady(ctx, probe, kubeconfig, begin, cfg, exited, func() error { return waitErr })
	if run.Err != nil {
		run.Ready = 0
	}
	run.Stop, run.Killed = stopProcess(cmd, exited, cfg.StopTimeout)
	run.Exit = waitErr // stopProcess has waited for the exit
	return run
}

// waitReady polls /readyz every cfg.PollInterval until it answers 200, and returns the
// time since begin. It fails when the process exits, at cfg.Timeout after begin, or
// when ctx is done.
func waitReady(ctx context.Context, probe *readyzProbe, kubeconfig string, begin time.Time, cfg startupConfig, exited <-chan struct{}, waitErr func() error) (time.Duration, error) {
	ctx, cancel := context.WithDeadline(ctx, begin.Add(cfg.Timeout))
	defer cancel()
	tick := time.NewTicker(cfg.PollInterval)
	defer tick.Stop()
	var last error
	for {
		ok, err := probe.check(ctx, kubeconfig)
		if ok {
			return time.Since(begin), nil
		}
		if err != nil && ctx.Err() == nil { // not the error of a request cut off at the deadline
			last = err
		}
		select {
		case <-tick.C:
		case <-exited:
			return 0, fmt.Errorf("process exited before it was ready: %v", waitErr())
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return 0, fmt.Errorf("not ready within %s (last: %v)", cfg.Timeout, last)
			}
			return 0, ctx.Err()
		}
	}
}

// readyzProbe GETs /readyz with the credentials of a kubeconfig that may not exist
// yet, or be rewritten, while the server starts: it rebuilds its client whenever the
// file's content changes.
type readyzProbe struct {
	raw    []byte
	client *http.Client
	url    string
}

func (p *readyzProbe) check(ctx context.Context, kubeconfig string) (bool, error) {
	raw, err := os.ReadFile(kubeconfig)
	if err != nil {
		return false, err
	}
	if p.client == nil || !bytes.Equal(raw, p.raw) {
		cfg, err := clientcmd.RESTConfigFromKubeConfig(raw)
		if err != nil {
			return false, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
		}
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			return false, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
		}
		p.close()
		host := strings.TrimRight(cfg.Host, "/")
		if !strings.Contains(host, "://") {
			host = "https://" + host
		}
		p.raw, p.client, p.url = raw, hc, host+"/readyz"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url, nil)
	if err != nil {
		return false, err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return false, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("GET %s: %s", p.url, resp.Status)
	}
	return true, nil
}

func (p *readyzProbe) close() {
	if p.client != nil {
		p.client.CloseIdleConnections()
	}
}

// stopProcess sends SIGINT to the process (group) and SIGKILL after stopTimeout, and
// returns how long it took to exit. Whatever is left of the process group is killed.
func stopProcess(cmd *exec.Cmd, exited <-chan struct{}, stopTimeout time.Duration) (d time.Duration, killed bool) {
	defer func() { _ = signalGroup(cmd, sigKill) }()
	select {
	case <-exited:
		return 0, false
	default:
	}
	begin := time.Now()
	_ = signalGroup(cmd, sigInterrupt)
	t := time.NewTimer(stopTimeout)
	defer t.Stop()
	select {
	case <-exited:
		return time.Since(begin), false
	case <-t.C:
		_ = signalGroup(cmd, sigKill)
		<-exited
		return time.Since(begin), true
	}
}

// fileTail returns up to the last n bytes of a file.
func fileTail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > n {
		_, _ = f.Seek(st.Size()-n, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	return string(b)
}
