package builtin

import (
	"math"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// kube 1.37's defaulting functions for the versions core serves (its SetDefaults_* in
// k8s.io/kubernetes/pkg/apis/<group>/<version>/defaults.go), with the feature gates at their
// 1.37 defaults. Each entry defaults one type wherever it appears; the declarative `+default=`
// markers of k8s.io/api's types are applied by the walker from the generated tags
// (defaulter.go).
func init() {
	// core/v1
	defaults(func(l *corev1.ResourceList) {
		for k, q := range *l {
			q.RoundUp(-3) // kube rounds quantities up to milli precision
			(*l)[k] = q
		}
	})
	defaults(func(rc *corev1.ReplicationController) {
		var labels map[string]string
		if rc.Spec.Template != nil {
			labels = rc.Spec.Template.Labels
		}
		if labels != nil {
			if len(rc.Spec.Selector) == 0 {
				rc.Spec.Selector = labels
			}
			if len(rc.Labels) == 0 {
				rc.Labels = labels
			}
		}
	})
	defaults(func(v *corev1.Volume) {
		if ptr.AllPtrFieldsNil(&v.VolumeSource) {
			v.VolumeSource = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
		}
		if v.Image != nil && v.Image.PullPolicy == "" {
			v.Image.PullPolicy = pullPolicy(v.Image.Reference)
		}
	})
	defaults(func(c *corev1.Container) { defaultContainer(c) })
	// Not a default: kube drops the field of its disabled ContainerStopSignals gate (alpha,
	// off in 1.37) from every pod and template it stores.
	defaults(func(l *corev1.Lifecycle) { l.StopSignal = nil })
	defaults(func(c *corev1.EphemeralContainer) { defaultContainer((*corev1.Container)(&c.EphemeralContainerCommon)) })
	defaults(func(s *corev1.Service) {
		spec := &s.Spec
		if spec.SessionAffinity == "" {
			spec.SessionAffinity = corev1.ServiceAffinityNone
		}
		if spec.SessionAffinity == corev1.ServiceAffinityNone {
			spec.SessionAffinityConfig = nil
		}
		if spec.SessionAffinity == corev1.ServiceAffinityClientIP &&
			(spec.SessionAffinityConfig == nil || spec.SessionAffinityConfig.ClientIP == nil || spec.SessionAffinityConfig.ClientIP.TimeoutSeconds == nil) {
			spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To(corev1.DefaultClientIPServiceAffinitySeconds)}}
		}
		if spec.Type == "" {
			spec.Type = corev1.ServiceTypeClusterIP
		}
		for i := range spec.Ports {
			p := &spec.Ports[i]
			if p.Protocol == "" {
				p.Protocol = corev1.ProtocolTCP
			}
			if p.TargetPort == intstr.FromInt32(0) || p.TargetPort == intstr.FromString("") {
				p.TargetPort = intstr.FromInt32(p.Port)
			}
		}
		if externallyAccessible(s) && spec.ExternalTrafficPolicy == "" {
			spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
		}
		if spec.InternalTrafficPolicy == nil && spec.Type != corev1.ServiceTypeExternalName {
			spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyCluster)
		}
		if spec.Type == corev1.ServiceTypeLoadBalancer {
			if spec.AllocateLoadBalancerNodePorts == nil {
				spec.AllocateLoadBalancerNodePorts = ptr.To(true)
			}
			for i, ing := range s.Status.LoadBalancer.Ingress {
				if ing.IP != "" && ing.IPMode == nil {
					s.Status.LoadBalancer.Ingress[i].IPMode = ptr.To(corev1.LoadBalancerIPModeVIP)
				}
			}
		}
	})
	defaults(func(p *corev1.Pod) {
		for _, cs := range [][]corev1.Container{p.Spec.Containers, p.Spec.InitContainers} {
			for i := range cs {
				r := &cs[i].Resources
				if r.Limits == nil {
					continue
				}
				if r.Requests == nil {
					r.Requests = corev1.ResourceList{}
				}
				for k, q := range r.Limits {
					if _, ok := r.Requests[k]; !ok {
						r.Requests[k] = q.DeepCopy()
					}
				}
			}
		}
		if p.Spec.EnableServiceLinks == nil {
			p.Spec.EnableServiceLinks = ptr.To(corev1.DefaultEnableServiceLinks)
		}
		if p.Spec.HostNetwork {
			for _, cs := range [][]corev1.Container{p.Spec.Containers, p.Spec.InitContainers} {
				for i := range cs {
					for j := range cs[i].Ports {
						if cs[i].Ports[j].HostPort == 0 {
							cs[i].Ports[j].HostPort = cs[i].Ports[j].ContainerPort
						}
					}
				}
			}
		}
	})
	defaults(func(s *corev1.PodStatus) {
		switch hasIP, hasIPs := s.PodIP != "", len(s.PodIPs) > 0; {
		case hasIP && !hasIPs, hasIP && hasIPs && s.PodIPs[0].IP != s.PodIP:
			s.PodIPs = []corev1.PodIP{{IP: s.PodIP}}
		case !hasIP && hasIPs:
			s.PodIP = s.PodIPs[0].IP
		}
	})
	defaults(func(s *corev1.PodSpec) {
		if s.ServiceAccountName == "" {
			s.ServiceAccountName = s.DeprecatedServiceAccount //nolint:staticcheck // kept in sync, as kube does
		}
		s.DeprecatedServiceAccount = s.ServiceAccountName //nolint:staticcheck // kept in sync, as kube does
		if s.DNSPolicy == "" {
			s.DNSPolicy = corev1.DNSClusterFirst
		}
		if s.RestartPolicy == "" {
			s.RestartPolicy = corev1.RestartPolicyAlways
		}
		if s.SecurityContext == nil {
			s.SecurityContext = &corev1.PodSecurityContext{}
		}
		if s.TerminationGracePeriodSeconds == nil {
			s.TerminationGracePeriodSeconds = ptr.To[int64](corev1.DefaultTerminationGracePeriodSeconds)
		}
		if s.SchedulerName == "" {
			s.SchedulerName = corev1.DefaultSchedulerName
		}
	})
	defaults(func(p *corev1.Probe) {
		for _, f := range []struct {
			v   *int32
			def int32
		}{{&p.TimeoutSeconds, 1}, {&p.PeriodSeconds, 10}, {&p.SuccessThreshold, 1}, {&p.FailureThreshold, 3}} {
			if *f.v == 0 {
				*f.v = f.def
			}
		}
	})
	defaults(func(s *corev1.SecretVolumeSource) { defaultMode(&s.DefaultMode, corev1.SecretVolumeSourceDefaultMode) })
	defaults(func(s *corev1.ConfigMapVolumeSource) {
		defaultMode(&s.DefaultMode, corev1.ConfigMapVolumeSourceDefaultMode)
	})
	defaults(func(s *corev1.DownwardAPIVolumeSource) {
		defaultMode(&s.DefaultMode, corev1.DownwardAPIVolumeSourceDefaultMode)
	})
	defaults(func(s *corev1.ProjectedVolumeSource) {
		defaultMode(&s.DefaultMode, corev1.ProjectedVolumeSourceDefaultMode)
	})
	defaults(func(p *corev1.ServiceAccountTokenProjection) {
		if p.ExpirationSeconds == nil {
			p.ExpirationSeconds = ptr.To(int64(time.Hour.Seconds()))
		}
	})
	defaults(func(s *corev1.Secret) {
		if s.Type == "" {
			s.Type = corev1.SecretTypeOpaque
		}
		// stringData is write-only: merged into data when decoded, as kube's conversion does.
		for k, v := range s.StringData {
			if s.Data == nil {
				s.Data = map[string][]byte{}
			}
			s.Data[k] = []byte(v)
		}
		s.StringData = nil
	})
	defaults(func(c *corev1.ConfigMap) {
		if c.Data == nil {
			c.Data = map[string]string{}
		}
	})
	defaults(func(pv *corev1.PersistentVolume) {
		if pv.Status.Phase == "" {
			pv.Status.Phase = corev1.VolumePending
		}
		if pv.Spec.PersistentVolumeReclaimPolicy == "" {
			pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
		}
		if pv.Spec.VolumeMode == nil {
			pv.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
		}
	})
	defaults(func(pvc *corev1.PersistentVolumeClaim) {
		if pvc.Status.Phase == "" {
			pvc.Status.Phase = corev1.ClaimPending
		}
	})
	defaults(func(s *corev1.PersistentVolumeClaimSpec) {
		if s.VolumeMode == nil {
			s.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
		}
	})
	defaults(func(e *corev1.Endpoints) {
		for i := range e.Subsets {
			for j := range e.Subsets[i].Ports {
				if p := &e.Subsets[i].Ports[j]; p.Protocol == "" {
					p.Protocol = corev1.ProtocolTCP
				}
			}
		}
	})
	defaults(func(a *corev1.HTTPGetAction) {
		if a.Path == "" {
			a.Path = "/"
		}
		if a.Scheme == "" {
			a.Scheme = corev1.URISchemeHTTP
		}
	})
	defaults(func(n *corev1.Namespace) {
		if n.Name != "" {
			if n.Labels == nil {
				n.Labels = map[string]string{}
			}
			n.Labels[corev1.LabelMetadataName] = n.Name
		}
	})
	defaults(func(s *corev1.NamespaceStatus) {
		if s.Phase == "" {
			s.Phase = corev1.NamespaceActive
		}
	})
	defaults(func(s *corev1.NodeStatus) {
		if s.Allocatable == nil && s.Capacity != nil {
			s.Allocatable = s.Capacity.DeepCopy()
		}
	})
	defaults(func(s *corev1.ObjectFieldSelector) {
		if s.APIVersion == "" {
			s.APIVersion = "v1"
		}
	})
	defaults(func(i *corev1.LimitRangeItem) { defaultLimitRangeItem(i) })
	defaults(func(s *corev1.HostPathVolumeSource) {
		if s.Type == nil {
			s.Type = ptr.To(corev1.HostPathUnset)
		}
	})

	// apps/v1
	defaults(func(d *appsv1.Deployment) {
		s := &d.Spec
		defaultReplicas(&s.Replicas)
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
		defaultInt32(&s.RevisionHistoryLimit, 10)
		defaultInt32(&s.ProgressDeadlineSeconds, 600)
	})
	defaults(func(d *appsv1.DaemonSet) {
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
		defaultInt32(&d.Spec.RevisionHistoryLimit, 10)
	})
	defaults(func(ss *appsv1.StatefulSet) {
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
			defaultInt32(&ru.Partition, 0)
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
		defaultReplicas(&s.Replicas)
		defaultInt32(&s.RevisionHistoryLimit, 10)
		for i := range s.VolumeClaimTemplates { // kube's conversion names their kind
			s.VolumeClaimTemplates[i].APIVersion, s.VolumeClaimTemplates[i].Kind = "v1", "PersistentVolumeClaim"
		}
	})
	defaults(func(rs *appsv1.ReplicaSet) { defaultReplicas(&rs.Spec.Replicas) })

	// batch/v1
	defaults(func(j *batchv1.Job) {
		s := &j.Spec
		if s.Completions == nil && s.Parallelism == nil {
			s.Completions = ptr.To[int32](1)
		}
		defaultInt32(&s.Parallelism, 1)
		if s.BackoffLimit == nil {
			if s.BackoffLimitPerIndex != nil {
				s.BackoffLimit = ptr.To[int32](math.MaxInt32)
			} else {
				s.BackoffLimit = ptr.To[int32](6)
			}
		}
		if labels := s.Template.Labels; labels != nil && len(j.Labels) == 0 {
			j.Labels = labels
		}
		if s.CompletionMode == nil {
			s.CompletionMode = ptr.To(batchv1.NonIndexedCompletion)
		}
		if s.Suspend == nil {
			s.Suspend = ptr.To(false)
		}
		if s.PodReplacementPolicy == nil {
			if s.PodFailurePolicy != nil {
				s.PodReplacementPolicy = ptr.To(batchv1.Failed)
			} else {
				s.PodReplacementPolicy = ptr.To(batchv1.TerminatingOrFailed)
			}
		}
		if s.ManualSelector == nil {
			s.ManualSelector = ptr.To(false)
		}
	})
	defaults(func(c *batchv1.CronJob) {
		s := &c.Spec
		if s.ConcurrencyPolicy == "" {
			s.ConcurrencyPolicy = batchv1.AllowConcurrent
		}
		if s.Suspend == nil {
			s.Suspend = ptr.To(false)
		}
		defaultInt32(&s.SuccessfulJobsHistoryLimit, 3)
		defaultInt32(&s.FailedJobsHistoryLimit, 1)
	})
	defaults(func(p *batchv1.PodFailurePolicyOnPodConditionsPattern) {
		if p.Status == "" {
			p.Status = corev1.ConditionTrue
		}
	})

	// autoscaling
	defaults(func(h *autoscalingv1.HorizontalPodAutoscaler) { defaultInt32(&h.Spec.MinReplicas, 1) })
	defaults(func(h *autoscalingv2.HorizontalPodAutoscaler) { defaultHPA(h) })

	// networking.k8s.io/v1
	defaults(func(p *networkingv1.NetworkPolicyPort) {
		if p.Protocol == nil {
			p.Protocol = ptr.To(corev1.ProtocolTCP)
		}
	})
	defaults(func(np *networkingv1.NetworkPolicy) {
		if len(np.Spec.PolicyTypes) == 0 {
			np.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
			if len(np.Spec.Egress) != 0 {
				np.Spec.PolicyTypes = append(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress)
			}
		}
	})
	defaults(func(ic *networkingv1.IngressClass) {
		if p := ic.Spec.Parameters; p != nil && p.Scope == nil {
			p.Scope = ptr.To(networkingv1.IngressClassParametersReferenceScopeCluster)
		}
	})

	// discovery.k8s.io/v1
	defaults(func(p *discoveryv1.EndpointPort) {
		if p.Name == nil {
			p.Name = ptr.To("")
		}
		if p.Protocol == nil {
			p.Protocol = ptr.To(corev1.ProtocolTCP)
		}
	})

	// storage.k8s.io/v1
	defaults(func(sc *storagev1.StorageClass) {
		if sc.ReclaimPolicy == nil {
			sc.ReclaimPolicy = ptr.To(corev1.PersistentVolumeReclaimDelete)
		}
		if sc.VolumeBindingMode == nil {
			sc.VolumeBindingMode = ptr.To(storagev1.VolumeBindingImmediate)
		}
	})
	defaults(func(d *storagev1.CSIDriver) {
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

	// scheduling.k8s.io/v1
	defaults(func(pc *schedulingv1.PriorityClass) {
		if pc.PreemptionPolicy == nil {
			pc.PreemptionPolicy = ptr.To(corev1.PreemptLowerPriority)
		}
	})

	// rbac.authorization.k8s.io/v1
	defaults(func(b *rbacv1.ClusterRoleBinding) { defaultString(&b.RoleRef.APIGroup, rbacv1.GroupName) })
	defaults(func(b *rbacv1.RoleBinding) { defaultString(&b.RoleRef.APIGroup, rbacv1.GroupName) })
	defaults(func(s *rbacv1.Subject) {
		if s.APIGroup == "" && (s.Kind == rbacv1.UserKind || s.Kind == rbacv1.GroupKind) {
			s.APIGroup = rbacv1.GroupName
		}
	})

	// flowcontrol.apiserver.k8s.io/v1
	defaults(func(s *flowcontrolv1.FlowSchemaSpec) {
		if s.MatchingPrecedence == 0 {
			s.MatchingPrecedence = 1000
		}
	})
	defaults(func(e *flowcontrolv1.ExemptPriorityLevelConfiguration) {
		defaultInt32(&e.NominalConcurrencyShares, 0)
		defaultInt32(&e.LendablePercent, 0)
	})
	defaults(func(l *flowcontrolv1.LimitedPriorityLevelConfiguration) {
		defaultInt32(&l.NominalConcurrencyShares, 30)
		defaultInt32(&l.LendablePercent, 0)
	})
	defaults(func(q *flowcontrolv1.QueuingConfiguration) {
		for _, f := range []struct {
			v   *int32
			def int32
		}{{&q.HandSize, 8}, {&q.Queues, 64}, {&q.QueueLengthLimit, 50}} {
			if *f.v == 0 {
				*f.v = f.def
			}
		}
	})

	// resource.k8s.io/v1
	defaults(func(r *resourcev1.ExactDeviceRequest) { defaultAllocationMode(&r.AllocationMode, &r.Count) })
	defaults(func(r *resourcev1.DeviceSubRequest) { defaultAllocationMode(&r.AllocationMode, &r.Count) })
	defaults(func(t *resourcev1.DeviceTaint) {
		if t.TimeAdded == nil {
			t.TimeAdded = &metav1.Time{Time: time.Now().Truncate(time.Second)}
		}
	})
}

// pullPolicy is an image's default pull policy: Always for ":latest" or no tag, else IfNotPresent.
func pullPolicy(image string) corev1.PullPolicy {
	if imageTag(image) == "latest" {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

// imageTag is the tag of an image reference as kube's parser reads it: "latest" when it has
// neither tag nor digest, "" when it has only a digest.
func imageTag(image string) string {
	name := image
	if i := strings.Index(name, "@"); i >= 0 {
		if strings.LastIndex(name[:i], ":") <= strings.LastIndex(name[:i], "/") {
			return ""
		}
		name = name[:i]
	}
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		return name[i+1:]
	}
	return "latest"
}

func defaultContainer(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = pullPolicy(c.Image)
	}
	defaultString(&c.TerminationMessagePath, corev1.TerminationMessagePathDefault)
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
}

// externallyAccessible: a NodePort or LoadBalancer service, or a ClusterIP one with external IPs.
func externallyAccessible(s *corev1.Service) bool {
	return s.Spec.Type == corev1.ServiceTypeLoadBalancer || s.Spec.Type == corev1.ServiceTypeNodePort ||
		(s.Spec.Type == corev1.ServiceTypeClusterIP && len(s.Spec.ExternalIPs) > 0)
}

func defaultMode(m **int32, def int32) {
	if *m == nil {
		*m = ptr.To(def)
	}
}

func defaultString(s *string, def string) {
	if *s == "" {
		*s = def
	}
}

func defaultInt32(p **int32, def int32) {
	if *p == nil {
		*p = ptr.To(def)
	}
}

func defaultReplicas(p **int32) { defaultInt32(p, 1) }

func defaultAllocationMode(mode *resourcev1.DeviceAllocationMode, count *int64) {
	if *mode == "" {
		*mode = resourcev1.DeviceAllocationModeExactCount
	}
	if *mode == resourcev1.DeviceAllocationModeExactCount && *count == 0 {
		*count = 1
	}
}

func defaultLimitRangeItem(i *corev1.LimitRangeItem) {
	if i.Type != corev1.LimitTypeContainer {
		return
	}
	if i.Default == nil {
		i.Default = corev1.ResourceList{}
	}
	if i.DefaultRequest == nil {
		i.DefaultRequest = corev1.ResourceList{}
	}
	for _, from := range []struct{ src, dst corev1.ResourceList }{{i.Max, i.Default}, {i.Default, i.DefaultRequest}, {i.Min, i.DefaultRequest}} {
		for k, q := range from.src {
			if _, ok := from.dst[k]; !ok {
				from.dst[k] = q.DeepCopy()
			}
		}
	}
}

// defaultHPA is autoscaling/v2's defaulting: one replica at least, 80% CPU when no metric is
// given, and the scaling rules' gaps filled from kube's default behavior.
func defaultHPA(h *autoscalingv2.HorizontalPodAutoscaler) {
	defaultInt32(&h.Spec.MinReplicas, 1)
	if len(h.Spec.Metrics) == 0 {
		h.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
			Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](80)}}}}
	}
	if b := h.Spec.Behavior; b != nil {
		b.ScaleUp = fillScalingRules(b.ScaleUp, &autoscalingv2.HPAScalingRules{
			StabilizationWindowSeconds: ptr.To[int32](0), SelectPolicy: ptr.To(autoscalingv2.MaxChangePolicySelect),
			Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
				{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}}})
		b.ScaleDown = fillScalingRules(b.ScaleDown, &autoscalingv2.HPAScalingRules{
			SelectPolicy: ptr.To(autoscalingv2.MaxChangePolicySelect),
			Policies:     []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}}})
	}
}

func fillScalingRules(from, to *autoscalingv2.HPAScalingRules) *autoscalingv2.HPAScalingRules {
	if from == nil {
		return to
	}
	if from.SelectPolicy != nil {
		to.SelectPolicy = from.SelectPolicy
	}
	if from.StabilizationWindowSeconds != nil {
		to.StabilizationWindowSeconds = from.StabilizationWindowSeconds
	}
	if from.Policies != nil {
		to.Policies = from.Policies
	}
	if from.Tolerance != nil {
		to.Tolerance = from.Tolerance
	}
	return to
}
