package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// BenchmarkCreateCustomResourceVsConfigMap creates custom resources (dynamic client; pruning,
// defaulting and OpenAPI validation of widgets' schema) and ConfigMaps through the same gateway
// path, 8 workers each, so
// the README can put the two create rates side by side. Run: go test -run '^$' -bench
// CreateCustomResourceVsConfigMap -benchtime 2000x ./test/e2e
func BenchmarkCreateCustomResourceVsConfigMap(b *testing.B) {
	c, _ := startAllInOne(b)
	crd := filepath.Join(b.TempDir(), "crd.yaml")
	if err := os.WriteFile(crd, []byte(widgetCRD), 0o600); err != nil {
		b.Fatal(err)
	}
	if out, err := kubectl(b, filepath.Join(c.data, "admin.kubeconfig"), "create", "-f", crd); err != nil {
		b.Fatal(out)
	}
	waitEstablished(b, filepath.Join(c.data, "admin.kubeconfig"), "widgets.example.com")
	cfg := *c.config
	cfg.QPS, cfg.Burst = -1, 0
	cs := kubernetes.NewForConfigOrDie(&cfg)
	dyn := dynamic.NewForConfigOrDie(&cfg)
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	widgets := dyn.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}).Namespace("bench")
	var seq atomic.Int64
	run := func(b *testing.B, op func(i int64) error) {
		benchConcurrent(b, 8, func() error { return op(seq.Add(1)) })
	}
	b.Run("configmap", func(b *testing.B) {
		run(b, func(i int64) error {
			_, err := cs.CoreV1().ConfigMaps("bench").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)},
				Data: map[string]string{"size": "2"}}, metav1.CreateOptions{})
			return err
		})
	})
	b.Run("custom-resource", func(b *testing.B) {
		run(b, func(i int64) error {
			_, err := widgets.Create(ctx, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
				"metadata": map[string]any{"name": fmt.Sprintf("w-%d", i)}, "spec": map[string]any{"size": int64(2)}}}, metav1.CreateOptions{})
			return err
		})
	})
}
