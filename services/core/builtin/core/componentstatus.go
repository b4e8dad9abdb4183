package core

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/apichain/apichain/pkg/registry"
	"github.com/apichain/apichain/pkg/storage"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// componentStatuses are v1 ComponentStatuses, computed on each read as kube does: the
// scheduler's and controller-manager's health endpoints on this host, and each etcd member
// (apichain's controllers run in core; no kube-controller-manager is probed on its port
// unless one runs there).
func componentStatuses(etcd *clientv3.Client) *registry.Resource {
	return &registry.Resource{GroupVersion: corev1.SchemeGroupVersion, Name: "componentstatuses", SingularName: "componentstatus",
		Kind: "ComponentStatus", ShortNames: []string{"cs"}, NoAgeColumn: true,
		New: registry.Of[corev1.ComponentStatus](), NewList: registry.Of[corev1.ComponentStatusList](),
		Computed: func(ctx context.Context) ([]runtime.Object, error) {
			out := []runtime.Object{
				probeComponent(ctx, "scheduler", "https://127.0.0.1:10259/healthz"),
				probeComponent(ctx, "controller-manager", "https://127.0.0.1:10257/healthz"),
			}
			if etcd != nil {
				for i, ep := range storage.Members(etcd) {
					cs := &corev1.ComponentStatus{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("etcd-%d", i)}}
					c, cancel := context.WithTimeout(ctx, 2*time.Second)
					_, err := etcd.Status(c, ep)
					cancel()
					cs.Conditions = []corev1.ComponentCondition{healthCondition(err, "ok")}
					out = append(out, cs)
				}
			}
			return out, nil
		},
		Columns: []metav1.TableColumnDefinition{
			registry.Column("Status", "string", "Status of the component conditions"),
			registry.Column("Message", "string", "Message of the component conditions"),
			registry.Column("Error", "string", "Error of the component conditions"),
		},
		Cells: func(o runtime.Object) []any {
			status, message, errText := "Unknown", "", ""
			for _, c := range o.(*corev1.ComponentStatus).Conditions {
				if c.Type == corev1.ComponentHealthy {
					status = "Unhealthy"
					if c.Status == corev1.ConditionTrue {
						status = "Healthy"
					}
					message, errText = c.Message, c.Error
					break
				}
			}
			return []any{status, message, errText}
		},
	}
}

var probeClient = &http.Client{Timeout: 2 * time.Second,
	Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // kube probes these endpoints the same way

func probeComponent(ctx context.Context, name, url string) *corev1.ComponentStatus {
	cs := &corev1.ComponentStatus{ObjectMeta: metav1.ObjectMeta{Name: name}}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := probeClient.Do(req)
	body := ""
	if err == nil {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		resp.Body.Close()
		body = strings.TrimSpace(string(b))
		if resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("unhealthy: %d %s", resp.StatusCode, body)
		}
	}
	cs.Conditions = []corev1.ComponentCondition{healthCondition(err, body)}
	return cs
}

func healthCondition(err error, message string) corev1.ComponentCondition {
	if err != nil {
		return corev1.ComponentCondition{Type: corev1.ComponentHealthy, Status: corev1.ConditionFalse, Message: err.Error()}
	}
	return corev1.ComponentCondition{Type: corev1.ComponentHealthy, Status: corev1.ConditionTrue, Message: message}
}
