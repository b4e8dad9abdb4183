package e2e

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// process is a started binary whose output is kept for assertions and shown on failure.
type process struct {
	t    testing.TB
	name string
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
	err  error
}

func start(t testing.TB, name string, args ...string) *process {
	t.Helper()
	p := &process{t: t, name: name, done: make(chan struct{})}
	p.cmd = exec.Command(binary(name), args...)
	pr, pw := io.Pipe()
	p.cmd.Stdout, p.cmd.Stderr = pw, pw
	require.NoError(t, p.cmd.Start())
	go func() {
		s := bufio.NewScanner(pr)
		s.Buffer(make([]byte, 1<<20), 1<<20)
		for s.Scan() {
			p.mu.Lock()
			p.out.WriteString(s.Text() + "\n")
			p.mu.Unlock()
		}
	}()
	go func() {
		p.err = p.cmd.Wait()
		pw.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("--- output of %s %v ---\n%s", name, args, p.output())
		}
	})
	return p
}

func (p *process) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

func (p *process) kill() {
	select {
	case <-p.done:
	default:
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *process) signal(sig syscall.Signal) { require.NoError(p.t, p.cmd.Process.Signal(sig)) }

// wait waits for the process to exit and returns its exit code.
func (p *process) wait(timeout time.Duration) int {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		p.t.Fatalf("%s did not exit within %s", p.name, timeout)
	}
	return p.cmd.ProcessState.ExitCode()
}

// client talks to the gateway with a kubeconfig's credentials over client-go's transport.
type client struct {
	t      testing.TB
	base   string
	http   *http.Client
	config *rest.Config
	data   string
}

func waitKubeconfig(t testing.TB, path string) *client {
	t.Helper()
	require.Eventually(t, func() bool { _, err := os.Stat(path); return err == nil }, 60*time.Second, 20*time.Millisecond,
		"kubeconfig %s not written", path)
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	require.NoError(t, err)
	cfg.Timeout = 30 * time.Second
	hc, err := rest.HTTPClientFor(cfg)
	require.NoError(t, err)
	return &client{t: t, base: cfg.Host, http: hc, config: cfg, data: filepath.Dir(path)}
}

// anonymous is a client without credentials that trusts the server.
func (c *client) anonymous() *http.Client {
	tlsCfg, err := rest.TLSConfigFor(&rest.Config{TLSClientConfig: rest.TLSClientConfig{CAData: c.config.CAData}})
	require.NoError(c.t, err)
	return &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg.Clone(), DisableKeepAlives: true}, Timeout: 10 * time.Second}
}

func (c *client) get(path string) (int, string, http.Header) {
	c.t.Helper()
	return doGet(c.t, c.http, c.base+path)
}

func doGet(t testing.TB, hc *http.Client, url string) (int, string, http.Header) {
	t.Helper()
	resp, err := hc.Get(url)
	if err != nil {
		return 0, err.Error(), nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), resp.Header
}

// waitReady waits for /readyz to answer 200.
func (c *client) waitReady(timeout time.Duration) string {
	c.t.Helper()
	var body string
	require.Eventually(c.t, func() bool {
		var code int
		code, body, _ = c.get("/readyz?verbose")
		return code == http.StatusOK
	}, timeout, 20*time.Millisecond, "gateway never became ready; last /readyz: %s", func() string { return body }())
	return body
}

// eventuallyBody waits until GET path answers code with a body containing every want.
func (c *client) eventuallyBody(path string, code int, timeout time.Duration, want ...string) string {
	c.t.Helper()
	var last string
	var lastCode int
	ok := false
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(deadline) {
		lastCode, last, _ = c.get(path)
		if lastCode == code && containsAll(last, want) {
			ok = true
			break
		}
		<-tick.C
	}
	require.True(c.t, ok, "GET %s: want %d containing %q, last got %d:\n%s", path, code, want, lastCode, last)
	return last
}

func containsAll(s string, want []string) bool {
	for _, w := range want {
		if !strings.Contains(s, w) {
			return false
		}
	}
	return true
}

// kubectl runs the installed kubectl against kubeconfig.
func kubectl(t testing.TB, kubeconfig string, args ...string) (string, error) {
	t.Helper()
	return kubectlEnv(t, nil, kubeconfig, args...)
}

// eventuallyKubectl runs kubectl until its output holds want, for up to 20 s, and returns it.
func eventuallyKubectl(t testing.TB, kubeconfig, want string, args ...string) string {
	t.Helper()
	var out string
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, _ = kubectl(t, kubeconfig, args...)
		if strings.Contains(out, want) {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("kubectl %s: no %q in the output within 20 s; last output:\n%s", strings.Join(args, " "), want, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// kubectlEnv runs kubectl with extra environment variables (EDITOR for kubectl edit).
func kubectlEnv(t testing.TB, env []string, kubeconfig string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func tempDataDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	return filepath.Join(dir, "data")
}

// kubectlWatch starts a kubectl that keeps writing lines (get -w) and returns a wait for its
// next line holding every want; it ends with the test.
func kubectlWatch(t *testing.T, kubeconfig string, args ...string) func(want ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	watch := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig", kubeconfig}, args...)...)
	stdout, err := watch.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, watch.Start())
	t.Cleanup(func() {
		cancel()
		_ = watch.Wait()
	})
	lines := make(chan string, 100)
	go func() {
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			lines <- s.Text()
		}
		close(lines)
	}()
	return func(want ...string) {
		t.Helper()
		for {
			select {
			case l, ok := <-lines:
				require.True(t, ok, "watch ended before a line with %v", want)
				if containsAll(l, want) {
					return
				}
			case <-ctx.Done():
				t.Fatalf("no watch line with %v", want)
			}
		}
	}
}
