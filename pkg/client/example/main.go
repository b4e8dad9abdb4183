// Command example uses apichain's gRPC API with the Go client: it creates a ConfigMap, watches
// it change from a list's resourceVersion, updates it, applies a change server-side, and
// deletes it.
//
//	go run ./pkg/client/example --kubeconfig apichain-data/admin.kubeconfig
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/apichain/apichain/pkg/client"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the gateway (default: $KUBECONFIG, then ~/.kube/config)")
	namespace := flag.String("namespace", "default", "namespace to work in")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	c, err := client.FromKubeconfig(*kubeconfig)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	// The connection carries the gateway's other services too: its readiness, for one.
	health, err := healthpb.NewHealthClient(c.Conn()).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("gateway", health.GetStatus())
	configMaps := client.For[corev1.ConfigMap, corev1.ConfigMapList](c, corev1.SchemeGroupVersion.WithResource("configmaps")).
		Namespace(*namespace)

	// What an earlier run left behind goes first.
	selector := metav1.ListOptions{LabelSelector: "app=grpc-example"}
	if err := configMaps.DeleteCollection(ctx, metav1.DeleteOptions{}, selector); err != nil {
		log.Fatal(err)
	}
	list, err := configMaps.List(ctx, selector)
	if err != nil {
		log.Fatal(err)
	}
	// Watch from the list's resourceVersion: the watch resumes by itself if the stream ends.
	w, err := configMaps.ResumingWatch(ctx, metav1.ListOptions{LabelSelector: "app=grpc-example", ResourceVersion: list.ResourceVersion})
	if err != nil {
		log.Fatal(err)
	}
	defer w.Stop()

	cm, err := configMaps.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "greeting-", Labels: map[string]string{"app": "grpc-example"}},
		Data:       map[string]string{"hello": "world"},
	}, metav1.CreateOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("created %s (uid %s)\n", cm.Name, cm.UID)

	cm.Data["hello"] = "there"
	if cm, err = configMaps.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		log.Fatal(err)
	}
	applied := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: cm.Name},
		Data:       map[string]string{"hello": "gRPC"},
	}
	if _, err := configMaps.Apply(ctx, applied, "grpc-example", true); err != nil {
		log.Fatal(err)
	}
	if err := configMaps.Delete(ctx, cm.Name, metav1.DeleteOptions{}); err != nil {
		log.Fatal(err)
	}

	for ev := range w.ResultChan() {
		got, ok := ev.Object.(*corev1.ConfigMap)
		if !ok { // an ERROR event carries a *metav1.Status
			log.Fatalf("watch: %s %v", ev.Type, ev.Object)
		}
		if ev.Type == "BOOKMARK" {
			continue
		}
		fmt.Printf("%s %s hello=%s\n", ev.Type, got.Name, got.Data["hello"])
		if ev.Type == "DELETED" {
			// Errors are kube's, as client-go reports them.
			if _, err := configMaps.Get(ctx, got.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				log.Fatalf("get after delete: %v", err)
			}
			return
		}
	}
	log.Fatal("the watch ended early")
}
