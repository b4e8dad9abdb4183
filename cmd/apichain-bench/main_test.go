package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// helperEnv makes the test binary act as a server under test for the startup mode
// (see helperServer); helperLogEnv names a file it appends its directory to.
const (
	helperEnv    = "APICHAIN_BENCH_TEST_HELPER"
	helperLogEnv = "APICHAIN_BENCH_TEST_HELPER_LOG"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helperServer(mode, os.Args[1:]))
	}
	os.Exit(m.Run())
}

// helperServer is a stand-in server: started with its data directory, it writes
// dir/admin.kubeconfig and serves /readyz, and exits 0 on SIGINT. Modes:
//
//	ready          first points the kubeconfig at a decoy that answers 503, and once the
//	               decoy has been asked, rewrites it to the real server, which answers
//	               503 twice and then 200 (so readiness needs a reloaded kubeconfig)
//	never          /readyz always answers 503
//	ignore-sigint  like ready, but ignores SIGINT
//	exit           prints an error and exits 3 at once
func helperServer(mode string, args []string) int {
	if len(args) != 1 {
		fmt.Println("usage: helper DIR")
		return 2
	}
	dir := args[0]
	if log := os.Getenv(helperLogEnv); log != "" {
		f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return 5
		}
		fmt.Fprintln(f, dir)
		f.Close()
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) > 0 {
		fmt.Println("data dir is not a fresh empty directory:", err)
		return 4
	}
	sig := make(chan os.Signal, 1)
	if mode == "ignore-sigint" {
		signal.Ignore(os.Interrupt)
	} else {
		signal.Notify(sig, os.Interrupt)
	}
	switch mode {
	case "exit":
		fmt.Println("boom: cannot start")
		return 3
	case "never":
		writeKubeconfig(dir, serve(func(int64) int { return http.StatusServiceUnavailable }))
	case "ready", "ignore-sigint":
		asked := make(chan struct{})
		var once atomic.Bool
		decoy := serve(func(int64) int {
			if !once.Swap(true) {
				close(asked)
			}
			return http.StatusServiceUnavailable
		})
		writeKubeconfig(dir, decoy)
		<-asked
		writeKubeconfig(dir, serve(func(n int64) int {
			if n <= 2 {
				return http.StatusServiceUnavailable
			}
			return http.StatusOK
		}))
	default:
		fmt.Println("unknown mode", mode)
		return 2
	}
	<-sig
	return 0
}

// serve starts an HTTP server whose /readyz answers status(n) to its n-th request.
func serve(status func(n int64) int) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	var n atomic.Int64
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status(n.Add(1)))
	}))
	return "http://" + ln.Addr().String()
}

// writeKubeconfig replaces dir/admin.kubeconfig atomically.
func writeKubeconfig(dir, server string) {
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: %s
contexts:
- name: c
  context:
    cluster: c
    user: u
current-context: c
users:
- name: u
  user: {}
`, server)
	tmp := filepath.Join(dir, ".admin.kubeconfig.tmp")
	if err := os.WriteFile(tmp, []byte(kc), 0o600); err != nil {
		panic(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "admin.kubeconfig")); err != nil {
		panic(err)
	}
}

func runCLI(t *testing.T, factory clientFactory, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = execute(context.Background(), args, &out, &errOut, factory)
	t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	return code, out.String(), errOut.String()
}

var smallFlags = []string{"--kubeconfig", "unused", "--concurrency", "4", "--objects", "60", "--lists", "3",
	"--list-page-size", "25", "--updates", "100", "--conflict-objects", "3", "--watchers", "5", "--watch-events", "20"}

// End to end through the command line: a fake server whose creates fail three times
// makes the run fail, with exit code 1, and it never says OK.
func TestCLIWorkloadFailure(t *testing.T) {
	f := newFakeServer()
	var injected atomic.Int64
	f.PrependReactor("create", "configmaps", failFirst(3, errInternal, &injected))
	code, stdout, _ := runCLI(t, fakeFactory(f), smallFlags...)
	assert.Equal(t, exitFailed, code)
	assert.Regexp(t, `(?m)^create\s+60\s+3\s`, stdout)
	assert.NotContains(t, stdout, " -", "no negative throughput: never more errors than operations")
	// How many more fail depends on which objects are missing: gets of them, and
	// updates if they are among the update-conflict objects.
	assert.Regexp(t, `(?m)^FAILED: [1-9][0-9]* operations failed$`, stdout)
	assert.NotRegexp(t, `(?m)^OK$`, stdout)
}

func TestCLIWorkloadJSON(t *testing.T) {
	code, stdout, stderr := runCLI(t, fakeFactory(newFakeServer()), append(smallFlags, "--json")...)
	require.Equal(t, exitOK, code)
	var got struct {
		OK        bool
		Failed    int
		Namespace string
		Results   []struct {
			Operation string
			Count     int
			Errors    int
		}
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &got), "stdout must be only the JSON document")
	assert.True(t, got.OK)
	assert.Len(t, got.Results, 7)
	assert.True(t, strings.HasPrefix(got.Namespace, namespacePrefix))
	assert.Contains(t, stderr, "OPERATION")
	assert.Regexp(t, `(?m)^OK$`, stderr)
}

func TestCLIUsageErrors(t *testing.T) {
	factory := fakeFactory(newFakeServer())
	tests := []struct {
		args []string
		want string
	}{
		{nil, "--kubeconfig is required"},
		{[]string{"--kubeconfig", "x", "--concurrency", "0"}, "--concurrency must be at least 1"},
		{[]string{"--kubeconfig", "x", "extra"}, `unknown command "extra"`},
		{[]string{"startup", "--readyz-kubeconfig", "k"}, "no command: give it after --"},
		{[]string{"startup", "--", "srv"}, "--readyz-kubeconfig is required"},
		{[]string{"startup", "--readyz-kubeconfig", "k", "srv", "--", "x"}, "the command must follow --"},
	}
	for _, tt := range tests {
		code, _, stderr := runCLI(t, factory, tt.args...)
		assert.Equal(t, exitError, code, "%q", tt.args)
		assert.Contains(t, stderr, tt.want, "%q", tt.args)
	}

	f := newFakeServer()
	var n atomic.Int64
	f.PrependReactor("create", "namespaces", failFirst(1, apierrors.NewServiceUnavailable("down"), &n))
	code, _, stderr := runCLI(t, fakeFactory(f), "--kubeconfig", "x")
	assert.Equal(t, exitError, code)
	assert.Contains(t, stderr, "creating the benchmark namespace: down")
}
