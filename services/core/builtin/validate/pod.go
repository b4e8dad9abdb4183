// Package validate holds the checks the API groups share, as kube's pkg/apis/core/validation
// does: the pod spec every workload embeds, checked as kube's ValidatePodSpec checks it (same
// order, field paths and messages: volumes, containers with their probes, lifecycle handlers and
// security contexts, init and ephemeral containers, restart and DNS policy, affinity, topology
// spread, tolerations, and the rest of the spec), and the field checks (names, label
// selectors, resource names, quantities) kube's validation helpers make.
package validate

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// allowPrivileged is --allow-privileged: kube's process-wide capability (its capabilities
// package), false unless the flag says otherwise.
var allowPrivileged atomic.Bool

// AllowPrivileged sets whether containers may run privileged.
func AllowPrivileged(allow bool) { allowPrivileged.Store(allow) }

// PodTemplate is kube's ValidatePodTemplateSpec, for workloads' templates.
func PodTemplate(t *corev1.PodTemplateSpec, p *field.Path) field.ErrorList {
	errs := metav1validation.ValidateLabels(t.Labels, p.Child("labels"))
	errs = append(errs, apivalidation.ValidateAnnotations(t.Annotations, p.Child("annotations"))...)
	errs = append(errs, PodSpec(&t.Spec, p.Child("spec"))...)
	if len(t.Spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(p.Child("spec", "ephemeralContainers"), "ephemeral containers not allowed in pod template"))
	}
	return errs
}

func PodSpec(s *corev1.PodSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.TerminationGracePeriodSeconds == nil {
		errs = append(errs, field.Required(p.Child("terminationGracePeriodSeconds"), ""))
	}
	vols, verrs := validateVolumes(s.Volumes, p.Child("volumes"))
	errs = append(errs, verrs...)
	cp := p.Child("containers")
	if len(s.Containers) == 0 {
		errs = append(errs, field.Required(cp, ""))
	}
	names := sets.New[string]()
	for _, list := range []struct {
		containers []corev1.Container
		path       *field.Path
		init       bool
	}{{s.Containers, cp, false}, {s.InitContainers, p.Child("initContainers"), true}} {
		for i := range list.containers {
			c := &list.containers[i]
			ip := list.path.Index(i)
			errs = append(errs, validateContainer(c, vols, ip)...)
			if names.Has(c.Name) {
				errs = append(errs, field.Duplicate(ip.Child("name"), c.Name))
			}
			names.Insert(c.Name)
			sidecar := c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
			switch {
			case !list.init:
				errs = append(errs, validateContainerHandlers(c, s.TerminationGracePeriodSeconds, ip)...)
				if c.RestartPolicy != nil {
					errs = append(errs, field.Forbidden(ip.Child("restartPolicy"), "may not be set for non-init containers"))
				}
			case sidecar:
				errs = append(errs, validateContainerHandlers(c, s.TerminationGracePeriodSeconds, ip)...)
			default:
				for _, f := range []struct {
					name string
					set  bool
				}{{"lifecycle", c.Lifecycle != nil}, {"livenessProbe", c.LivenessProbe != nil}, {"readinessProbe", c.ReadinessProbe != nil}, {"startupProbe", c.StartupProbe != nil}} {
					if f.set {
						errs = append(errs, field.Forbidden(ip.Child(f.name), "may not be set for init containers without restartPolicy=Always"))
					}
				}
			}
		}
	}
	errs = append(errs, Supported(p.Child("restartPolicy"), s.RestartPolicy, corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever)...)
	if s.DNSPolicy == "" {
		errs = append(errs, field.Required(p.Child("dnsPolicy"), ""))
	} else if !sets.New(corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone).Has(s.DNSPolicy) {
		errs = append(errs, field.NotSupported(p.Child("dnsPolicy"), &s.DNSPolicy,
			[]corev1.DNSPolicy{corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone}))
	}
	errs = append(errs, metav1validation.ValidateLabels(s.NodeSelector, p.Child("nodeSelector"))...)
	errs = append(errs, validatePodSecurityContext(s.SecurityContext, p.Child("securityContext"))...)
	for i, ps := range s.ImagePullSecrets {
		if ps.Name == "" {
			errs = append(errs, field.Required(p.Child("imagePullSecrets").Index(i).Child("name"), ""))
		}
	}
	errs = append(errs, validateAffinity(s.Affinity, p.Child("affinity"))...)
	errs = append(errs, validateTopologySpreadConstraints(s.TopologySpreadConstraints, p.Child("topologySpreadConstraints"))...)
	if s.ServiceAccountName != "" {
		errs = append(errs, InvalidEach(p.Child("serviceAccountName"), s.ServiceAccountName, apivalidation.ValidateServiceAccountName(s.ServiceAccountName, false))...)
	}
	if s.DeprecatedServiceAccount != s.ServiceAccountName { //nolint:staticcheck // kube keeps the alias in sync
		errs = append(errs, field.Invalid(p.Child("deprecatedServiceAccount"), s.DeprecatedServiceAccount, //nolint:staticcheck // as above
			fmt.Sprintf("must be the same as serviceAccountName: %q", s.ServiceAccountName)))
	}
	if s.NodeName != "" {
		errs = append(errs, InvalidEach(p.Child("nodeName"), s.NodeName, apivalidation.NameIsDNSSubdomain(s.NodeName, false))...)
	}
	if d := s.ActiveDeadlineSeconds; d != nil && (*d < 1 || *d > math.MaxInt32) {
		errs = append(errs, field.Invalid(p.Child("activeDeadlineSeconds"), *d, validation.InclusiveRangeError(1, math.MaxInt32)))
	}
	for _, f := range []struct{ name, v string }{{"hostname", s.Hostname}, {"subdomain", s.Subdomain}} {
		if f.v != "" {
			errs = append(errs, DNS1123Label(f.v, p.Child(f.name))...)
		}
	}
	errs = append(errs, Tolerations(s.Tolerations, p.Child("tolerations"))...)
	if s.PriorityClassName != "" {
		errs = append(errs, InvalidEach(p.Child("priorityClassName"), s.PriorityClassName, apivalidation.NameIsDNSSubdomain(s.PriorityClassName, false))...)
	}
	return errs
}

// volumeSources are a volume's source fields in the order kube checks them.
var volumeSources = []string{"EmptyDir", "HostPath", "GitRepo", "GCEPersistentDisk", "AWSElasticBlockStore", "Secret", "NFS", "ISCSI",
	"Glusterfs", "Flocker", "PersistentVolumeClaim", "RBD", "Cinder", "CephFS", "Quobyte", "DownwardAPI", "FC", "FlexVolume", "ConfigMap",
	"AzureFile", "VsphereVolume", "PhotonPersistentDisk", "PortworxVolume", "AzureDisk", "StorageOS", "Projected", "ScaleIO", "CSI",
	"Ephemeral", "Image"}

func validateVolumes(volumes []corev1.Volume, p *field.Path) (sets.Set[string], field.ErrorList) {
	var errs field.ErrorList
	names := sets.New[string]()
	for i := range volumes {
		v := &volumes[i]
		vp := p.Index(i)
		el := validateVolumeSource(&v.VolumeSource, vp)
		np := vp.Child("name")
		el = append(el, RequiredLabel(v.Name, np)...)
		if names.Has(v.Name) {
			el = append(el, field.Duplicate(np, v.Name))
		}
		if len(el) == 0 {
			names.Insert(v.Name)
		}
		errs = append(errs, el...)
	}
	return names, errs
}

func validateVolumeSource(vs *corev1.VolumeSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	v := reflect.ValueOf(vs).Elem()
	found := 0
	for _, name := range volumeSources {
		f := v.FieldByName(name)
		if f.IsNil() {
			continue
		}
		sf, _ := v.Type().FieldByName(name)
		fp := p.Child(strings.Split(sf.Tag.Get("json"), ",")[0])
		if found > 0 {
			errs = append(errs, field.Forbidden(fp, "may not specify more than 1 volume type"))
			continue
		}
		found++
		switch s := f.Interface().(type) {
		case *corev1.HostPathVolumeSource:
			if s.Path == "" {
				errs = append(errs, field.Required(fp.Child("path"), ""))
			}
		case *corev1.SecretVolumeSource:
			if s.SecretName == "" {
				errs = append(errs, field.Required(fp.Child("secretName"), ""))
			}
			errs = append(errs, validateFileMode(s.DefaultMode, fp)...)
		case *corev1.ConfigMapVolumeSource:
			if s.Name == "" {
				errs = append(errs, field.Required(fp.Child("name"), ""))
			}
			errs = append(errs, validateFileMode(s.DefaultMode, fp)...)
		case *corev1.PersistentVolumeClaimVolumeSource:
			if s.ClaimName == "" {
				errs = append(errs, field.Required(fp.Child("claimName"), ""))
			}
		case *corev1.NFSVolumeSource:
			if s.Server == "" {
				errs = append(errs, field.Required(fp.Child("server"), ""))
			}
			if s.Path == "" {
				errs = append(errs, field.Required(fp.Child("path"), ""))
			}
		case *corev1.CSIVolumeSource:
			if s.Driver == "" {
				errs = append(errs, field.Required(fp.Child("driver"), ""))
			}
		}
	}
	if found == 0 {
		errs = append(errs, field.Required(p, "must specify a volume type"))
	}
	return errs
}

func validateFileMode(mode *int32, p *field.Path) field.ErrorList {
	if mode != nil && (*mode > 0o777 || *mode < 0) {
		return field.ErrorList{field.Invalid(p.Child("defaultMode"), *mode, "must be a number between 0 and 0777 (octal), both inclusive")}
	}
	return nil
}

func validateContainer(c *corev1.Container, volumes sets.Set[string], p *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, RequiredLabel(c.Name, p.Child("name"))...)
	if c.Image == "" {
		errs = append(errs, field.Required(p.Child("image"), ""))
	}
	errs = append(errs, Supported(p.Child("terminationMessagePolicy"), c.TerminationMessagePolicy,
		corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError)...)
	portNames := sets.New[string]()
	for i, port := range c.Ports {
		pp := p.Child("ports").Index(i)
		if port.Name != "" {
			if msgs := validation.IsValidPortName(port.Name); len(msgs) > 0 {
				errs = append(errs, InvalidEach(pp.Child("name"), port.Name, msgs)...)
			} else if portNames.Has(port.Name) {
				errs = append(errs, field.Duplicate(pp.Child("name"), port.Name))
			} else {
				portNames.Insert(port.Name)
			}
		}
		if port.ContainerPort == 0 {
			errs = append(errs, field.Required(pp.Child("containerPort"), ""))
		} else {
			errs = append(errs, InvalidEach(pp.Child("containerPort"), port.ContainerPort, validation.IsValidPortNum(int(port.ContainerPort)))...)
		}
		if port.HostPort != 0 {
			errs = append(errs, InvalidEach(pp.Child("hostPort"), port.HostPort, validation.IsValidPortNum(int(port.HostPort)))...)
		}
		errs = append(errs, Supported(pp.Child("protocol"), port.Protocol, corev1.ProtocolSCTP, corev1.ProtocolTCP, corev1.ProtocolUDP)...)
	}
	for i, ev := range c.Env {
		np := p.Child("env").Index(i).Child("name")
		if ev.Name == "" {
			errs = append(errs, field.Required(np, ""))
			continue
		}
		errs = append(errs, InvalidEach(np, ev.Name, validation.IsRelaxedEnvVarName(ev.Name))...)
	}
	mountPaths := sets.New[string]()
	for i, m := range c.VolumeMounts {
		mp := p.Child("volumeMounts").Index(i)
		if m.Name == "" {
			errs = append(errs, field.Required(mp.Child("name"), ""))
		}
		if !volumes.Has(m.Name) {
			errs = append(errs, field.NotFound(mp.Child("name"), m.Name))
		}
		if m.MountPath == "" {
			errs = append(errs, field.Required(mp.Child("mountPath"), ""))
		}
		if mountPaths.Has(m.MountPath) {
			errs = append(errs, field.Invalid(mp.Child("mountPath"), m.MountPath, "must be unique"))
		}
		mountPaths.Insert(m.MountPath)
	}
	errs = append(errs, Supported(p.Child("imagePullPolicy"), c.ImagePullPolicy, corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever)...)
	errs = append(errs, validateResources(&c.Resources, p.Child("resources"))...)
	if sc := c.SecurityContext; sc != nil {
		if sc.Privileged != nil && *sc.Privileged && !allowPrivileged.Load() {
			errs = append(errs, field.Forbidden(p.Child("securityContext", "privileged"), "disallowed by cluster policy"))
		}
		errs = append(errs, validateContainerSecurityContext(sc, p.Child("securityContext"))...)
	}
	return errs
}

// validateResources checks a container's requests against its limits, as kube does.
func validateResources(r *corev1.ResourceRequirements, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	reqPath := p.Child("requests")
	for _, name := range SortedResourceNames(r.Requests) {
		q := r.Requests[name]
		if q.Sign() < 0 {
			errs = append(errs, field.Invalid(reqPath.Key(string(name)), q.String(), "must be greater than or equal to 0"))
		}
		lim, ok := r.Limits[name]
		overcommit := !strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) && !isExtendedResource(name)
		switch {
		case ok && q.Cmp(lim) != 0 && !overcommit:
			errs = append(errs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be equal to %s limit of %s", name, lim.String())))
		case ok && q.Cmp(lim) > 0:
			errs = append(errs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, lim.String())))
		case !ok && !overcommit:
			errs = append(errs, field.Required(p.Child("limits"), "Limit must be set for non overcommitable resources"))
		}
	}
	for _, name := range SortedResourceNames(r.Limits) {
		if q := r.Limits[name]; q.Sign() < 0 {
			errs = append(errs, field.Invalid(p.Child("limits").Key(string(name)), q.String(), "must be greater than or equal to 0"))
		}
	}
	return errs
}

// isExtendedResource: a domain-prefixed resource outside kubernetes.io and requests.*.
func isExtendedResource(name corev1.ResourceName) bool {
	s := string(name)
	if !strings.Contains(s, "/") || strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	domain := s[:strings.Index(s, "/")]
	return domain != "kubernetes.io" && !strings.HasSuffix(domain, ".kubernetes.io")
}
