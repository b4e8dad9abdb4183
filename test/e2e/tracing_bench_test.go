package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/apichain/apichain/pkg/tracing/tracingtest"
)

// BenchmarkTracingOverhead measures what tracing costs requests through the all-in-one: client-go
// creates and gets at 8 concurrent clients with tracing off (no --tracing-config-file), on at 1
// sample per million and on at every request, spans exported over OTLP to a receiver in this
// process. Run: go test -run '^$' -bench TracingOverhead -benchtime 3000x ./test/e2e/
func BenchmarkTracingOverhead(b *testing.B) {
	recv := tracingtest.Start(b)
	for _, c := range []struct {
		name string
		rate int // per million; -1: off
	}{{"off", -1}, {"1-per-million", 1}, {"every-request", 1000000}} {
		b.Run(c.name, func(b *testing.B) {
			var args []string
			if c.rate >= 0 {
				cfg := filepath.Join(b.TempDir(), "tracing.yaml")
				writeFile(b, cfg, fmt.Sprintf("apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: %s\nsamplingRatePerMillion: %d\n", recv.Addr, c.rate))
				args = []string{"--tracing-config-file", cfg}
			}
			cl, _ := startAllInOne(b, args...)
			cfg := *cl.config
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
			create := func() error {
				_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", seq.Add(1))}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
				return err
			}
			if err := create(); err != nil {
				b.Fatal(err)
			}
			b.Run("create", func(b *testing.B) { benchConcurrent(b, 8, create) })
			b.Run("get", func(b *testing.B) {
				benchConcurrent(b, 8, func() error { _, err := cms.Get(ctx, "cm-1", metav1.GetOptions{}); return err })
			})
		})
	}
}
