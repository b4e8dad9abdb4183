package apps

import (
	"github.com/apichain/apichain/services/core/builtin/defaulting"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// kube 1.37's defaulting functions for the apps/v1 types (its SetDefaults_* in
// k8s.io/kubernetes/pkg/apis/apps/v1/defaults.go), with the feature gates at their 1.37 defaults;
// declarative `+default=` markers are applied by the defaulting walker.
func init() {
	defaulting.Register(func(d *appsv1.Deployment) {
		s := &d.Spec
		defaulting.Int32(&s.Replicas, 1)
		if s.Strategy.Type == "" {
			s.Strategy.Type = appsv1.RollingUpdateDeploymentStrategyType
		}
		if s.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType {
			if s.Strategy.RollingUpdate == nil {
				s.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{}
			}
			if s.Strategy.RollingUpdate.MaxUnavailable == nil {
				s.Strategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromString("25%"))
			}
			if s.Strategy.RollingUpdate.MaxSurge == nil {
				s.Strategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromString("25%"))
			}
		}
		defaulting.Int32(&s.RevisionHistoryLimit, 10)
		defaulting.Int32(&s.ProgressDeadlineSeconds, 600)
	})
	defaulting.Register(func(d *appsv1.DaemonSet) {
		u := &d.Spec.UpdateStrategy
		if u.Type == "" {
			u.Type = appsv1.RollingUpdateDaemonSetStrategyType
		}
		if u.Type == appsv1.RollingUpdateDaemonSetStrategyType {
			if u.RollingUpdate == nil {
				u.RollingUpdate = &appsv1.RollingUpdateDaemonSet{}
			}
			if u.RollingUpdate.MaxUnavailable == nil {
				u.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(1))
			}
			if u.RollingUpdate.MaxSurge == nil {
				u.RollingUpdate.MaxSurge = ptr.To(intstr.FromInt32(0))
			}
		}
		defaulting.Int32(&d.Spec.RevisionHistoryLimit, 10)
	})
	defaulting.Register(func(ss *appsv1.StatefulSet) {
		s := &ss.Spec
		if s.PodManagementPolicy == "" {
			s.PodManagementPolicy = appsv1.OrderedReadyPodManagement
		}
		if s.UpdateStrategy.Type == "" {
			s.UpdateStrategy.Type = appsv1.RollingUpdateStatefulSetStrategyType
			if s.UpdateStrategy.RollingUpdate == nil {
				s.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{}
			}
		}
		if ru := s.UpdateStrategy.RollingUpdate; s.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType && ru != nil {
			defaulting.Int32(&ru.Partition, 0)
			if ru.MaxUnavailable == nil { // MaxUnavailableStatefulSet (beta, on)
				ru.MaxUnavailable = ptr.To(intstr.FromInt32(1))
			}
		}
		if s.PersistentVolumeClaimRetentionPolicy == nil {
			s.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{}
		}
		if p := s.PersistentVolumeClaimRetentionPolicy; p.WhenDeleted == "" {
			p.WhenDeleted = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
		}
		if p := s.PersistentVolumeClaimRetentionPolicy; p.WhenScaled == "" {
			p.WhenScaled = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
		}
		defaulting.Int32(&s.Replicas, 1)
		defaulting.Int32(&s.RevisionHistoryLimit, 10)
		for i := range s.VolumeClaimTemplates { // kube's conversion names their kind
			s.VolumeClaimTemplates[i].APIVersion, s.VolumeClaimTemplates[i].Kind = "v1", "PersistentVolumeClaim"
		}
	})
	defaulting.Register(func(rs *appsv1.ReplicaSet) { defaulting.Int32(&rs.Spec.Replicas, 1) })
}
