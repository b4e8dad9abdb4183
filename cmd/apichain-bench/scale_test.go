package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

// fakeScaleTarget serves the scale run from the fake server; lists are encoded as a server
// would, in JSON or protobuf. wrong, when set, drops an item from every full list.
func fakeScaleTarget(f *fakeServer, kubeconfig string, wrong bool) *scaleTarget {
	return &scaleTarget{cs: f, host: "fake", kubeconfig: kubeconfig,
		listRaw: func(ctx context.Context, ns string, opts metav1.ListOptions, protobuf bool) ([]byte, error) {
			l, err := f.CoreV1().ConfigMaps(ns).List(ctx, opts)
			if err != nil {
				return nil, err
			}
			if wrong && opts.Limit == 0 && opts.LabelSelector == "" {
				l.Items = l.Items[1:]
			}
			// The namespace's own ConfigMap, as a server creates it.
			if opts.Limit == 0 {
				l.Items = append(l.Items, corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Namespace: ns}})
			}
			l.APIVersion, l.Kind = "v1", "ConfigMapList"
			media := runtime.ContentTypeJSON
			if protobuf {
				media = runtime.ContentTypeProtobuf
			}
			info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), media)
			if !ok {
				return nil, fmt.Errorf("no serializer for %s", media)
			}
			var buf bytes.Buffer
			err = info.Serializer.Encode(l, &buf)
			return buf.Bytes(), err
		}}
}

// readyzServer answers /readyz 200 while ready says so; the kubeconfig names it.
func readyzServer(t *testing.T, ready func() bool) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" && ready() {
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, srv.URL), 0o600))
	return kubeconfig
}

// The scale run through the command line: every list kind is timed and checked, memory is
// read from the PID files, the restart runs the stop then the start command and waits for
// /readyz, and the comparison prints ratios of both.
func TestCLIScale(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "restarted") // the start command makes it; ready from then on
	kubeconfig := readyzServer(t, func() bool { _, err := os.Stat(marker); return err == nil })
	pidFile := filepath.Join(dir, "pids")
	require.NoError(t, os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600))
	servers := map[string]*fakeServer{"subject": newFakeServer(), "baseline": newFakeServer()}
	newTarget := func(name string) (*scaleTarget, error) {
		return fakeScaleTarget(servers[name], kubeconfig, false), nil
	}
	var out, errOut bytes.Buffer
	code := executeWith(context.Background(), []string{"scale", "--json", "--kubeconfig", "subject", "--baseline-kubeconfig", "baseline",
		"--objects", "95", "--object-size", "100", "--lists", "2", "--list-page-size", "20", "--concurrency", "4",
		"--rss-pid-file", pidFile, "--baseline-rss-pid-file", pidFile,
		"--stop-command", "rm -f " + marker, "--start-command", "touch " + marker,
		"--baseline-stop-command", "rm -f " + marker, "--baseline-start-command", "touch " + marker},
		&out, &errOut, nil, newTarget)
	t.Logf("stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	require.Equal(t, exitOK, code)
	assert.Contains(t, errOut.String(), "rss-after-restart")

	var got struct {
		OK       bool
		Baseline struct{ Results []struct{ Operation string } }
		Subject  struct {
			Results []struct {
				Operation string
				Count     int
				Errors    int
				Latency   struct{ N int } `json:"latency_ms"`
			}
			Memory []struct {
				Name  string
				Bytes int64
			}
		}
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &got))
	assert.True(t, got.OK)
	want := map[string]int{opCreate: 95, opListJSON: 2, opListProtobuf: 2, opListSelector: 2, opListFirstPage: 2, opRestart: 1}
	require.Len(t, got.Subject.Results, len(want))
	require.Len(t, got.Baseline.Results, len(want))
	for _, r := range got.Subject.Results {
		assert.Equal(t, want[r.Operation], r.Count, r.Operation)
		assert.Zero(t, r.Errors, r.Operation)
		assert.Equal(t, r.Count, r.Latency.N, r.Operation)
	}
	require.Len(t, got.Subject.Memory, 4)
	for _, m := range got.Subject.Memory {
		assert.Positive(t, m.Bytes, m.Name)
	}
	for _, ns := range []string{nsOf(t, servers["subject"])} {
		l, err := servers["subject"].CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{LabelSelector: shardLabel + "=0"})
		require.NoError(t, err)
		assert.Len(t, l.Items, 10, "objects 0, 10, ..., 90 are in shard 0")
	}
}

// A list that misses an object fails the run, and a failing restart command is an error of
// the restart, not of the run.
func TestScaleFailures(t *testing.T) {
	kubeconfig := readyzServer(t, func() bool { return true })
	cfg := defaultScaleConfig()
	cfg.Objects, cfg.ObjectSize, cfg.Lists, cfg.Concurrency = 30, 10, 1, 2
	cfg.StopCommand, cfg.StartCommand = "true", "exit 3"
	rep, err := runScale(context.Background(), fakeScaleTarget(newFakeServer(), kubeconfig, true), cfg, t.Logf)
	require.NoError(t, err)
	assert.False(t, rep.OK())
	errs := map[string]int{}
	for _, r := range rep.Results {
		errs[r.Operation] = r.Errors
	}
	assert.Equal(t, map[string]int{opCreate: 0, opListJSON: 1, opListProtobuf: 1, opListSelector: 0, opListFirstPage: 0, opRestart: 1}, errs)
}

func TestScaleConfigValidate(t *testing.T) {
	cfg := defaultScaleConfig()
	require.NoError(t, cfg.validate())
	cfg.StopCommand = "true"
	assert.ErrorContains(t, cfg.validate(), "go together")
	cfg = defaultScaleConfig()
	cfg.Objects = 0
	assert.Error(t, cfg.validate())
}

func TestResidentBytes(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "pids")
	require.NoError(t, os.WriteFile(f, fmt.Appendf(nil, "%d %d\n", os.Getpid(), os.Getpid()), 0o600))
	n, err := residentBytes([]string{f})
	require.NoError(t, err)
	one, err := processRSS(strconv.Itoa(os.Getpid()))
	require.NoError(t, err)
	assert.Positive(t, one)
	assert.InDelta(t, 2*one, n, float64(one), "two readings of this process")
	require.NoError(t, os.WriteFile(f, []byte("not-a-pid"), 0o600))
	_, err = residentBytes([]string{f})
	assert.ErrorContains(t, err, "not a PID")
	require.NoError(t, os.WriteFile(f, nil, 0o600))
	_, err = residentBytes([]string{f})
	assert.ErrorContains(t, err, "no PID")
}
