package e2e

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// BenchmarkAllInOneStartupToReady measures process start (exec) to the first /readyz 200 of
// the all-in-one with a fresh data directory: embedded etcd and NATS, certificates, three
// backends and the gateway. Run: make bench-startup.
func BenchmarkAllInOneStartupToReady(b *testing.B) {
	var samples []time.Duration
	for i := 0; i < b.N; i++ {
		samples = append(samples, startupOnce(b))
	}
	sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
	b.ReportMetric(float64(samples[len(samples)/2].Microseconds())/1000, "ms-median-to-ready")
	b.ReportMetric(float64(samples[0].Microseconds())/1000, "ms-min-to-ready")
	b.ReportMetric(float64(samples[len(samples)-1].Microseconds())/1000, "ms-max-to-ready")
}

func startupOnce(b *testing.B) time.Duration {
	data := filepath.Join(b.TempDir(), "data")
	cmd := exec.Command(binary("apichain"), "--data-dir", data, "--secure-port", "0", "--log-level", "error")
	begin := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() }()
	kubeconfig := filepath.Join(data, "admin.kubeconfig")
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(60 * time.Second)
	var hc *http.Client
	var host string
	for time.Now().Before(deadline) {
		<-tick.C
		if hc == nil {
			cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				continue
			}
			if hc, err = rest.HTTPClientFor(cfg); err != nil {
				b.Fatal(err)
			}
			host = cfg.Host
		}
		resp, err := hc.Get(host + "/readyz")
		if err != nil {
			continue
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return time.Since(begin)
		}
	}
	b.Fatal("not ready within 60s")
	return 0
}
