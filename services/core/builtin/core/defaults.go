package core

import (
	"strings"
	"time"

	"github.com/apichain/apichain/services/core/builtin/defaulting"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// kube 1.37's defaulting functions for the core/v1 types (its SetDefaults_* in
// k8s.io/kubernetes/pkg/apis/core/v1/defaults.go), with the feature gates at their 1.37 defaults;
// declarative `+default=` markers are applied by the defaulting walker.
func init() {
	defaulting.Register(func(l *corev1.ResourceList) {
		for k, q := range *l {
			q.RoundUp(-3) // kube rounds quantities up to milli precision
			(*l)[k] = q
		}
	})
	defaulting.Register(func(rc *corev1.ReplicationController) {
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
	defaulting.Register(func(v *corev1.Volume) {
		if ptr.AllPtrFieldsNil(&v.VolumeSource) {
			v.VolumeSource = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
		}
		if v.Image != nil && v.Image.PullPolicy == "" {
			v.Image.PullPolicy = pullPolicy(v.Image.Reference)
		}
	})
	defaulting.Register(func(c *corev1.Container) { defaultContainer(c) })
	// Not a default: kube drops the field of its disabled ContainerStopSignals gate (alpha,
	// off in 1.37) from every pod and template it stores.
	defaulting.Register(func(l *corev1.Lifecycle) { l.StopSignal = nil })
	defaulting.Register(func(c *corev1.EphemeralContainer) { defaultContainer((*corev1.Container)(&c.EphemeralContainerCommon)) })
	defaulting.Register(func(s *corev1.Service) {
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
	defaulting.Register(func(p *corev1.Pod) {
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
	defaulting.Register(func(s *corev1.PodStatus) {
		switch hasIP, hasIPs := s.PodIP != "", len(s.PodIPs) > 0; {
		case hasIP && !hasIPs, hasIP && hasIPs && s.PodIPs[0].IP != s.PodIP:
			s.PodIPs = []corev1.PodIP{{IP: s.PodIP}}
		case !hasIP && hasIPs:
			s.PodIP = s.PodIPs[0].IP
		}
	})
	defaulting.Register(func(s *corev1.PodSpec) {
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
	defaulting.Register(func(p *corev1.Probe) {
		for _, f := range []struct {
			v   *int32
			def int32
		}{{&p.TimeoutSeconds, 1}, {&p.PeriodSeconds, 10}, {&p.SuccessThreshold, 1}, {&p.FailureThreshold, 3}} {
			if *f.v == 0 {
				*f.v = f.def
			}
		}
	})
	defaulting.Register(func(s *corev1.SecretVolumeSource) {
		defaulting.Int32(&s.DefaultMode, corev1.SecretVolumeSourceDefaultMode)
	})
	defaulting.Register(func(s *corev1.ConfigMapVolumeSource) {
		defaulting.Int32(&s.DefaultMode, corev1.ConfigMapVolumeSourceDefaultMode)
	})
	defaulting.Register(func(s *corev1.DownwardAPIVolumeSource) {
		defaulting.Int32(&s.DefaultMode, corev1.DownwardAPIVolumeSourceDefaultMode)
	})
	defaulting.Register(func(s *corev1.ProjectedVolumeSource) {
		defaulting.Int32(&s.DefaultMode, corev1.ProjectedVolumeSourceDefaultMode)
	})
	defaulting.Register(func(p *corev1.ServiceAccountTokenProjection) {
		if p.ExpirationSeconds == nil {
			p.ExpirationSeconds = ptr.To(int64(time.Hour.Seconds()))
		}
	})
	defaulting.Register(func(s *corev1.Secret) {
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
	defaulting.Register(func(c *corev1.ConfigMap) {
		if c.Data == nil {
			c.Data = map[string]string{}
		}
	})
	defaulting.Register(func(pv *corev1.PersistentVolume) {
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
	defaulting.Register(func(pvc *corev1.PersistentVolumeClaim) {
		if pvc.Status.Phase == "" {
			pvc.Status.Phase = corev1.ClaimPending
		}
	})
	defaulting.Register(func(s *corev1.PersistentVolumeClaimSpec) {
		if s.VolumeMode == nil {
			s.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
		}
	})
	defaulting.Register(func(e *corev1.Endpoints) {
		for i := range e.Subsets {
			for j := range e.Subsets[i].Ports {
				if p := &e.Subsets[i].Ports[j]; p.Protocol == "" {
					p.Protocol = corev1.ProtocolTCP
				}
			}
		}
	})
	defaulting.Register(func(a *corev1.HTTPGetAction) {
		if a.Path == "" {
			a.Path = "/"
		}
		if a.Scheme == "" {
			a.Scheme = corev1.URISchemeHTTP
		}
	})
	defaulting.Register(func(n *corev1.Namespace) {
		if n.Name != "" {
			if n.Labels == nil {
				n.Labels = map[string]string{}
			}
			n.Labels[corev1.LabelMetadataName] = n.Name
		}
	})
	defaulting.Register(func(s *corev1.NamespaceStatus) {
		if s.Phase == "" {
			s.Phase = corev1.NamespaceActive
		}
	})
	defaulting.Register(func(s *corev1.NodeStatus) {
		if s.Allocatable == nil && s.Capacity != nil {
			s.Allocatable = s.Capacity.DeepCopy()
		}
	})
	defaulting.Register(func(s *corev1.ObjectFieldSelector) {
		if s.APIVersion == "" {
			s.APIVersion = "v1"
		}
	})
	defaulting.Register(func(i *corev1.LimitRangeItem) { defaultLimitRangeItem(i) })
	defaulting.Register(func(s *corev1.HostPathVolumeSource) {
		if s.Type == nil {
			s.Type = ptr.To(corev1.HostPathUnset)
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
	defaulting.String(&c.TerminationMessagePath, corev1.TerminationMessagePathDefault)
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
}

// externallyAccessible: a NodePort or LoadBalancer service, or a ClusterIP one with external IPs.
func externallyAccessible(s *corev1.Service) bool {
	return s.Spec.Type == corev1.ServiceTypeLoadBalancer || s.Spec.Type == corev1.ServiceTypeNodePort ||
		(s.Spec.Type == corev1.ServiceTypeClusterIP && len(s.Spec.ExternalIPs) > 0)
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
