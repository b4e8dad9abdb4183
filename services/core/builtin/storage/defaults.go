package storage

import (
	"github.com/apichain/apichain/services/core/builtin/defaulting"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/utils/ptr"
)

// kube 1.37's defaulting functions for the storage.k8s.io/v1 types (its SetDefaults_* in
// k8s.io/kubernetes/pkg/apis/storage/v1/defaults.go), with the feature gates at their 1.37 defaults;
// declarative `+default=` markers are applied by the defaulting walker.
func init() {
	defaulting.Register(func(sc *storagev1.StorageClass) {
		if sc.ReclaimPolicy == nil {
			sc.ReclaimPolicy = ptr.To(corev1.PersistentVolumeReclaimDelete)
		}
		if sc.VolumeBindingMode == nil {
			sc.VolumeBindingMode = ptr.To(storagev1.VolumeBindingImmediate)
		}
	})
	defaulting.Register(func(d *storagev1.CSIDriver) {
		s := &d.Spec
		// SELinuxMountReadWriteOncePod is GA and VolumeLimitScaling beta (on).
		for _, b := range []**bool{&s.AttachRequired, &s.PodInfoOnMount, &s.StorageCapacity, &s.RequiresRepublish, &s.SELinuxMount, &s.PreventPodSchedulingIfMissing} {
			if *b == nil {
				*b = ptr.To(b == &s.AttachRequired)
			}
		}
		if s.FSGroupPolicy == nil {
			s.FSGroupPolicy = ptr.To(storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy)
		}
		if len(s.VolumeLifecycleModes) == 0 {
			s.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}
		}
	})
}
