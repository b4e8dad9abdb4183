package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	grpcclient "github.com/apichain/apichain/pkg/client"
)

// configMapOps are the operations the benchmark compares, on one protocol.
type configMapOps struct {
	create func(ctx context.Context, cm *corev1.ConfigMap) error
	get    func(ctx context.Context, name string) error
	list   func(ctx context.Context) (int, error)
	watch  func(ctx context.Context, rv string) (watch.Interface, error)
}

// BenchmarkGRPCVsREST compares the same operations through the gateway over REST (client-go,
// JSON) and over gRPC (pkg/client, JSON bodies) on the all-in-one: create and get at 8
// concurrent clients, a list of 1,000 ConfigMaps, and the latency from a create to its watch
// event. Both pass the same filters and reach core over the same gRPC hop. Run:
// go test -run '^$' -bench GRPCVsREST -benchtime 2000x ./test/e2e/
func BenchmarkGRPCVsREST(b *testing.B) {
	c, _ := startAllInOne(b)
	ctx := context.Background()
	cfg := *c.config
	cfg.QPS, cfg.Burst = -1, 0
	cs, err := kubernetes.NewForConfig(&cfg)
	if err != nil {
		b.Fatal(err)
	}
	gc, err := grpcclient.FromKubeconfig(filepath.Join(c.dataDir(), "admin.kubeconfig"))
	if err != nil {
		b.Fatal(err)
	}
	defer gc.Close()
	const ns, listed = "bench", 1000
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	for i := range listed {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("listed-%d", i), Labels: map[string]string{"listed": "yes"}},
			Data: map[string]string{"k": "v"}}
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	rest := cs.CoreV1().ConfigMaps(ns)
	grpc := grpcclient.For[corev1.ConfigMap, corev1.ConfigMapList](gc, corev1.SchemeGroupVersion.WithResource("configmaps")).Namespace(ns)
	selectListed := metav1.ListOptions{LabelSelector: "listed=yes"}
	protocols := []struct {
		name string
		ops  configMapOps
	}{
		{"rest", configMapOps{
			create: func(ctx context.Context, cm *corev1.ConfigMap) error {
				_, err := rest.Create(ctx, cm, metav1.CreateOptions{})
				return err
			},
			get: func(ctx context.Context, name string) error {
				_, err := rest.Get(ctx, name, metav1.GetOptions{})
				return err
			},
			list: func(ctx context.Context) (int, error) {
				l, err := rest.List(ctx, selectListed)
				if err != nil {
					return 0, err
				}
				return len(l.Items), nil
			},
			watch: func(ctx context.Context, rv string) (watch.Interface, error) {
				return rest.Watch(ctx, metav1.ListOptions{ResourceVersion: rv, LabelSelector: "watched=yes"})
			},
		}},
		{"grpc", configMapOps{
			create: func(ctx context.Context, cm *corev1.ConfigMap) error {
				_, err := grpc.Create(ctx, cm, metav1.CreateOptions{})
				return err
			},
			get: func(ctx context.Context, name string) error {
				_, err := grpc.Get(ctx, name, metav1.GetOptions{})
				return err
			},
			list: func(ctx context.Context) (int, error) {
				l, err := grpc.List(ctx, selectListed)
				if err != nil {
					return 0, err
				}
				return len(l.Items), nil
			},
			watch: func(ctx context.Context, rv string) (watch.Interface, error) {
				return grpc.Watch(ctx, metav1.ListOptions{ResourceVersion: rv, LabelSelector: "watched=yes"})
			},
		}},
	}
	var seq atomic.Int64
	newCM := func(labels map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", seq.Add(1)), Labels: labels}, Data: map[string]string{"k": "v"}}
	}
	for _, p := range protocols {
		b.Run("create/"+p.name, func(b *testing.B) {
			benchConcurrent(b, 8, func() error { return p.ops.create(ctx, newCM(nil)) })
		})
		b.Run("get/"+p.name, func(b *testing.B) {
			benchConcurrent(b, 8, func() error { return p.ops.get(ctx, "listed-1") })
		})
		b.Run("list-1000/"+p.name, func(b *testing.B) {
			benchConcurrent(b, 1, func() error {
				n, err := p.ops.list(ctx)
				if err == nil && n != listed {
					err = fmt.Errorf("listed %d, not %d", n, listed)
				}
				return err
			})
		})
		b.Run("watch-event/"+p.name, func(b *testing.B) {
			list, err := rest.List(ctx, metav1.ListOptions{Limit: 1})
			if err != nil {
				b.Fatal(err)
			}
			w, err := p.ops.watch(ctx, list.ResourceVersion)
			if err != nil {
				b.Fatal(err)
			}
			defer w.Stop()
			lat := make([]time.Duration, b.N)
			b.ResetTimer()
			start := time.Now()
			for i := range b.N {
				t0 := time.Now()
				if err := p.ops.create(ctx, newCM(map[string]string{"watched": "yes"})); err != nil {
					b.Fatal(err)
				}
				if ev := <-w.ResultChan(); ev.Type != watch.Added {
					b.Fatalf("event %s: %v", ev.Type, ev.Object)
				}
				lat[i] = time.Since(t0)
			}
			elapsed := time.Since(start)
			b.StopTimer()
			reportLatency(b, lat, elapsed)
		})
	}
}
