package registry

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// BenchmarkStoredForm: what writing (encode) and reading back from etcd (decode: a cold read, a
// watch cache filling, a watch event) cost per object in each storage media type.
func BenchmarkStoredForm(b *testing.B) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "default", UID: "0b5cc1c0-2a2b-4c1e-9a57-7f8f1f0e3c11",
		Labels: map[string]string{"app": "web", "tier": "frontend"}, CreationTimestamp: metav1.Now()},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27", Ports: []corev1.ContainerPort{{ContainerPort: 8080, Protocol: "TCP"}},
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "default", UID: "u"}, Data: map[string]string{}}
	for i := range 16 {
		cm.Data[fmt.Sprintf("key-%d", i)] = fmt.Sprintf("%064d", i)
	}
	for _, tc := range []struct {
		name string
		r    *Resource
		obj  runtime.Object
	}{{"pod", podResource, pod}, {"configmap-1KiB", cmResource, cm}} {
		for _, media := range []string{MediaJSON, MediaProtobuf} {
			h := &Handler{storageMedia: media}
			data, err := h.encodeStored(tc.r, tc.obj)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(tc.name+"/"+media+"/encode", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := h.encodeStored(tc.r, tc.obj); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(data)), "bytes/object")
			})
			b.Run(tc.name+"/"+media+"/decode", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := decodeStoredForm(tc.r, data); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
