package dra

import (
	"time"

	"github.com/apichain/apichain/services/core/builtin/defaulting"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kube 1.37's defaulting functions for the resource.k8s.io/v1 types (its SetDefaults_* in
// k8s.io/kubernetes/pkg/apis/resource/v1/defaults.go), with the feature gates at their 1.37 defaults;
// declarative `+default=` markers are applied by the defaulting walker.
func init() {
	defaulting.Register(func(r *resourcev1.ExactDeviceRequest) { defaultAllocationMode(&r.AllocationMode, &r.Count) })
	defaulting.Register(func(r *resourcev1.DeviceSubRequest) { defaultAllocationMode(&r.AllocationMode, &r.Count) })
	defaulting.Register(func(t *resourcev1.DeviceTaint) {
		if t.TimeAdded == nil {
			t.TimeAdded = &metav1.Time{Time: time.Now().Truncate(time.Second)}
		}
	})
}

func defaultAllocationMode(mode *resourcev1.DeviceAllocationMode, count *int64) {
	if *mode == "" {
		*mode = resourcev1.DeviceAllocationModeExactCount
	}
	if *mode == resourcev1.DeviceAllocationModeExactCount && *count == 0 {
		*count = 1
	}
}
