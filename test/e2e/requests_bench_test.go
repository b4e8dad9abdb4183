package e2e

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// BenchmarkCoreThroughGateway measures client-go requests to core through the gateway on the
// all-in-one (TLS, filter chain, gRPC hop with mutual TLS, etcd): per-operation latency
// (p50/p99) and throughput at 8 concurrent clients. Run: make bench.
func BenchmarkCoreThroughGateway(b *testing.B) {
	c, _ := startAllInOne(b)
	cfg := *c.config
	cfg.QPS, cfg.Burst = -1, 0
	cs, err := kubernetes.NewForConfig(&cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	cms := cs.CoreV1().ConfigMaps("bench")
	var seq atomic.Int64
	newCM := func() *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", seq.Add(1))}, Data: map[string]string{"k": "v"}}
	}
	for i := 0; i < 100; i++ {
		if _, err := cms.Create(ctx, newCM(), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	run := func(b *testing.B, op func() error) { benchConcurrent(b, 8, op) }
	b.Run("create", func(b *testing.B) {
		run(b, func() error { _, err := cms.Create(ctx, newCM(), metav1.CreateOptions{}); return err })
	})
	b.Run("get", func(b *testing.B) {
		run(b, func() error { _, err := cms.Get(ctx, "cm-1", metav1.GetOptions{}); return err })
	})
	b.Run("list-100", func(b *testing.B) {
		run(b, func() error { _, err := cms.List(ctx, metav1.ListOptions{Limit: 100}); return err })
	})
	b.Run("watch-event", func(b *testing.B) {
		w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			b.Fatal(err)
		}
		defer w.Stop()
		// Drain the initial replay.
		list, _ := cms.List(ctx, metav1.ListOptions{})
		for range list.Items {
			<-w.ResultChan()
		}
		lat := make([]time.Duration, b.N)
		b.ResetTimer()
		start := time.Now()
		for i := 0; i < b.N; i++ {
			t0 := time.Now()
			if _, err := cms.Create(ctx, newCM(), metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
			<-w.ResultChan()
			lat[i] = time.Since(t0)
		}
		elapsed := time.Since(start)
		b.StopTimer()
		reportLatency(b, lat, elapsed)
	})
}

// benchConcurrent runs op b.N times from workers goroutines and reports latency and
// throughput; any failed operation fails the benchmark.
func benchConcurrent(b *testing.B, workers int, op func() error) {
	lat := make([]time.Duration, b.N)
	var next, failed atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				t0 := time.Now()
				if err := op(); err != nil {
					failed.Add(1)
				}
				lat[i] = time.Since(t0)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if failed.Load() > 0 {
		b.Fatalf("%d of %d operations failed", failed.Load(), b.N)
	}
	reportLatency(b, lat, elapsed)
}

func reportLatency(b *testing.B, lat []time.Duration, elapsed time.Duration) {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	p := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(p(0.5), "ms-p50")
	b.ReportMetric(p(0.99), "ms-p99")
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "ops/s")
}
