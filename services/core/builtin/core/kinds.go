package core

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/apichain/apichain/pkg/registry"
	"github.com/apichain/apichain/services/core/builtin/validate"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

const maxDataSize = 1 << 20

func validateKeys(path *field.Path, keys []string, size int) field.ErrorList {
	var errs field.ErrorList
	for _, k := range keys {
		errs = append(errs, validate.InvalidEach(path.Key(k), k, validation.IsConfigMapKey(k))...)
	}
	if size > maxDataSize {
		errs = append(errs, field.TooLong(path, "", maxDataSize))
	}
	return errs
}

func validateConfigMap(o runtime.Object) field.ErrorList {
	cm := o.(*corev1.ConfigMap)
	var keys []string
	size := 0
	for k, v := range cm.Data {
		keys, size = append(keys, k), size+len(k)+len(v)
	}
	errs := validateKeys(field.NewPath("data"), keys, 0)
	var bkeys []string
	for k, v := range cm.BinaryData {
		if _, dup := cm.Data[k]; dup {
			errs = append(errs, field.Invalid(field.NewPath("binaryData").Key(k), k, "duplicate of key present in data"))
		}
		bkeys, size = append(bkeys, k), size+len(k)+len(v)
	}
	errs = append(errs, validateKeys(field.NewPath("binaryData"), bkeys, 0)...)
	if size > maxDataSize {
		errs = append(errs, field.TooLong(field.NewPath(""), "", maxDataSize))
	}
	return errs
}

func immutable(path *field.Path, oldImmutable *bool, changed bool, newImmutable *bool) field.ErrorList {
	if oldImmutable == nil || !*oldImmutable {
		return nil
	}
	var errs field.ErrorList
	if newImmutable == nil || !*newImmutable {
		errs = append(errs, field.Forbidden(field.NewPath("immutable"), "field is immutable when `immutable` is set"))
	}
	if changed {
		errs = append(errs, field.Forbidden(path, "field is immutable when `immutable` is set"))
	}
	return errs
}

func validateConfigMapUpdate(o, old runtime.Object) field.ErrorList {
	cm, oc := o.(*corev1.ConfigMap), old.(*corev1.ConfigMap)
	changed := fmt.Sprint(cm.Data) != fmt.Sprint(oc.Data) || fmt.Sprint(cm.BinaryData) != fmt.Sprint(oc.BinaryData)
	return immutable(field.NewPath("data"), oc.Immutable, changed, cm.Immutable)
}

var configMapColumns = []metav1.TableColumnDefinition{registry.Column("Data", "string", corev1.ConfigMap{}.SwaggerDoc()["data"]), registry.AgeColumn}

func configMapCells(o runtime.Object) []any {
	cm := o.(*corev1.ConfigMap)
	return []any{int64(len(cm.Data) + len(cm.BinaryData)), registry.AgeCell(o)}
}

func validateSecret(o runtime.Object) field.ErrorList {
	s := o.(*corev1.Secret)
	var keys []string
	size := 0
	for k, v := range s.Data {
		keys, size = append(keys, k), size+len(v)
	}
	data := field.NewPath("data")
	return append(validateKeys(data, keys, size), validateSecretType(s, data)...)
}

// validateSecretType is kube's check of the keys a secret's type requires (ValidateSecret).
func validateSecretType(s *corev1.Secret, data *field.Path) field.ErrorList {
	var errs field.ErrorList
	wellFormedJSON := func(key string) {
		b, ok := s.Data[key]
		if !ok {
			errs = append(errs, field.Required(data.Key(key), ""))
		} else if err := json.Unmarshal(b, &map[string]any{}); err != nil {
			errs = append(errs, field.Invalid(data.Key(key), "<secret contents redacted>", err.Error()))
		}
	}
	has := func(key string) bool { _, ok := s.Data[key]; return ok }
	switch s.Type {
	case corev1.SecretTypeServiceAccountToken:
		if s.Annotations[corev1.ServiceAccountNameKey] == "" {
			errs = append(errs, field.Required(field.NewPath("metadata", "annotations").Key(corev1.ServiceAccountNameKey), ""))
		}
	case corev1.SecretTypeDockercfg:
		wellFormedJSON(corev1.DockerConfigKey)
	case corev1.SecretTypeDockerConfigJson:
		wellFormedJSON(corev1.DockerConfigJsonKey)
	case corev1.SecretTypeBasicAuth:
		// username or password may be empty, but one of them must be there
		if !has(corev1.BasicAuthUsernameKey) && !has(corev1.BasicAuthPasswordKey) {
			errs = append(errs, field.Required(data.Key(corev1.BasicAuthUsernameKey), ""), field.Required(data.Key(corev1.BasicAuthPasswordKey), ""))
		}
	case corev1.SecretTypeSSHAuth:
		if len(s.Data[corev1.SSHAuthPrivateKey]) == 0 {
			errs = append(errs, field.Required(data.Key(corev1.SSHAuthPrivateKey), ""))
		}
	case corev1.SecretTypeTLS:
		for _, key := range []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey} {
			if !has(key) {
				errs = append(errs, field.Required(data.Key(key), ""))
			}
		}
	}
	return errs
}

func validateSecretUpdate(o, old runtime.Object) field.ErrorList {
	s, os := o.(*corev1.Secret), old.(*corev1.Secret)
	var errs field.ErrorList
	if s.Type != os.Type {
		errs = append(errs, field.Invalid(field.NewPath("type"), s.Type, "field is immutable"))
	}
	changed := fmt.Sprint(s.Data) != fmt.Sprint(os.Data)
	return append(errs, immutable(field.NewPath("data"), os.Immutable, changed, s.Immutable)...)
}

var secretColumns = []metav1.TableColumnDefinition{
	registry.Column("Type", "string", corev1.Secret{}.SwaggerDoc()["type"]),
	registry.Column("Data", "string", corev1.Secret{}.SwaggerDoc()["data"]),
	registry.AgeColumn,
}

func secretCells(o runtime.Object) []any {
	s := o.(*corev1.Secret)
	return []any{string(s.Type), int64(len(s.Data)), registry.AgeCell(o)}
}

var serviceAccountColumns = []metav1.TableColumnDefinition{registry.Column("Secrets", "string", corev1.ServiceAccount{}.SwaggerDoc()["secrets"]), registry.AgeColumn}

func serviceAccountCells(o runtime.Object) []any {
	return []any{int64(len(o.(*corev1.ServiceAccount).Secrets)), registry.AgeCell(o)}
}

// preparePod is kube's pod strategy on create: a Pending status with the pod's QoS class, and
// the PodScheduled condition of a pod held by scheduling gates.
func preparePod(_ context.Context, o runtime.Object) {
	p := o.(*corev1.Pod)
	p.Status = corev1.PodStatus{Phase: corev1.PodPending}
	if len(p.Spec.SchedulingGates) > 0 {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonSchedulingGated, Message: "Scheduling is blocked due to non-empty scheduling gates"}}
	}
	p.Status.QOSClass = podQOS(p)
}

// podGracefulDelete is kube's: a pod gets the grace period asked for, or its own
// terminationGracePeriodSeconds; one that never ran on a node or has finished goes at once.
func podGracefulDelete(o runtime.Object, opts *metav1.DeleteOptions) bool {
	p := o.(*corev1.Pod)
	period := ptr.Deref(opts.GracePeriodSeconds, ptr.Deref(p.Spec.TerminationGracePeriodSeconds, 0))
	if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
		period = 0
	}
	if period < 0 {
		period = 1
	}
	opts.GracePeriodSeconds = &period
	return true
}

// podQOS is the pod's quality-of-service class from its CPU and memory requests and limits.
func podQOS(p *corev1.Pod) corev1.PodQOSClass {
	if p.Spec.Resources != nil { // pod-level resources decide
		return requirementsQOS(p.Spec.Resources)
	}
	var qos corev1.PodQOSClass
	for _, c := range append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
		switch cq := requirementsQOS(&c.Resources); {
		case cq == corev1.PodQOSBurstable:
			return cq
		case qos == "":
			qos = cq
		case qos != cq:
			return corev1.PodQOSBurstable
		}
	}
	if qos == "" {
		return corev1.PodQOSBestEffort
	}
	return qos
}

func requirementsQOS(r *corev1.ResourceRequirements) corev1.PodQOSClass {
	if len(r.Requests) == 0 && len(r.Limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	var qos corev1.PodQOSClass
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, lim := r.Requests[name], r.Limits[name]
		rq := corev1.PodQOSGuaranteed
		switch {
		case !req.Equal(lim):
			return corev1.PodQOSBurstable
		case req.IsZero():
			rq = corev1.PodQOSBestEffort
		}
		if qos == "" {
			qos = rq
		} else if qos != rq {
			return corev1.PodQOSBurstable
		}
	}
	return qos
}

var podColumns = []metav1.TableColumnDefinition{
	registry.Column("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
	registry.Column("Status", "string", "The aggregate status of the containers in this pod."),
	registry.Column("Restarts", "string", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
	registry.AgeColumn,
	registry.Wide(registry.Column("IP", "string", corev1.PodStatus{}.SwaggerDoc()["podIP"])),
	registry.Wide(registry.Column("Node", "string", corev1.PodSpec{}.SwaggerDoc()["nodeName"])),
	registry.Wide(registry.Column("Nominated Node", "string", corev1.PodStatus{}.SwaggerDoc()["nominatedNodeName"])),
	registry.Wide(registry.Column("Readiness Gates", "string", corev1.PodSpec{}.SwaggerDoc()["readinessGates"])),
}

func podCells(o runtime.Object) []any {
	p := o.(*corev1.Pod)
	ready := 0
	for _, c := range p.Status.ContainerStatuses {
		if c.Ready {
			ready++
		}
	}
	reason := string(p.Status.Phase)
	if p.Status.Reason != "" {
		reason = p.Status.Reason
	}
	if p.DeletionTimestamp != nil {
		reason = "Terminating"
	}
	restarts := int64(0)
	for _, c := range p.Status.ContainerStatuses {
		restarts += int64(c.RestartCount)
	}
	ip := "<none>"
	if len(p.Status.PodIPs) > 0 {
		ip = p.Status.PodIPs[0].IP
	}
	gates := "<none>"
	if len(p.Spec.ReadinessGates) > 0 {
		met := 0
		for _, g := range p.Spec.ReadinessGates {
			for _, c := range p.Status.Conditions {
				if c.Type == g.ConditionType && c.Status == corev1.ConditionTrue {
					met++
				}
			}
		}
		gates = fmt.Sprintf("%d/%d", met, len(p.Spec.ReadinessGates))
	}
	return []any{fmt.Sprintf("%d/%d", ready, len(p.Spec.Containers)), reason, restarts, registry.AgeCell(o),
		ip, registry.OrNone(p.Spec.NodeName), registry.OrNone(p.Status.NominatedNodeName), gates}
}

var serviceColumns = []metav1.TableColumnDefinition{
	registry.Column("Type", "string", corev1.ServiceSpec{}.SwaggerDoc()["type"]),
	registry.Column("Cluster-IP", "string", corev1.ServiceSpec{}.SwaggerDoc()["clusterIP"]),
	registry.Column("External-IP", "string", corev1.ServiceSpec{}.SwaggerDoc()["externalIPs"]),
	registry.Column("Port(s)", "string", corev1.ServiceSpec{}.SwaggerDoc()["ports"]),
	registry.AgeColumn,
	registry.Wide(registry.Column("Selector", "string", corev1.ServiceSpec{}.SwaggerDoc()["selector"])),
}

func serviceCells(o runtime.Object) []any {
	s := o.(*corev1.Service)
	clusterIP := s.Spec.ClusterIP
	if clusterIP == "" {
		clusterIP = "<none>"
	}
	var ports []string
	for _, p := range s.Spec.Ports {
		if p.NodePort != 0 {
			ports = append(ports, fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, p.Protocol))
		} else {
			ports = append(ports, fmt.Sprintf("%d/%s", p.Port, p.Protocol))
		}
	}
	portText := strings.Join(ports, ",")
	if portText == "" {
		portText = "<none>"
	}
	return []any{string(s.Spec.Type), clusterIP, serviceExternalIP(s), portText, registry.AgeCell(o), labels.FormatLabels(s.Spec.Selector)}
}

// serviceExternalIP is kubectl's EXTERNAL-IP cell: external IPs, a load balancer's ingress
// ("<pending>" until it has one), or an ExternalName's name.
func serviceExternalIP(s *corev1.Service) string {
	switch s.Spec.Type {
	case corev1.ServiceTypeExternalName:
		return s.Spec.ExternalName
	case corev1.ServiceTypeLoadBalancer:
		var ips []string
		for _, in := range s.Status.LoadBalancer.Ingress {
			if in.IP != "" {
				ips = append(ips, in.IP)
			} else if in.Hostname != "" {
				ips = append(ips, in.Hostname)
			}
		}
		ips = append(ips, s.Spec.ExternalIPs...)
		if len(ips) == 0 {
			return "<pending>"
		}
		if text := strings.Join(ips, ","); len(text) <= 16 {
			return text
		} else {
			return text[:13] + "..."
		}
	}
	if len(s.Spec.ExternalIPs) > 0 {
		return strings.Join(s.Spec.ExternalIPs, ",")
	}
	return "<none>"
}

var nodeColumns = []metav1.TableColumnDefinition{
	registry.Column("Status", "string", "The status of the node"),
	registry.Column("Roles", "string", "The roles of the node"),
	registry.AgeColumn,
	registry.Column("Version", "string", corev1.NodeSystemInfo{}.SwaggerDoc()["kubeletVersion"]),
	registry.Wide(registry.Column("Internal-IP", "string", corev1.NodeStatus{}.SwaggerDoc()["addresses"])),
	registry.Wide(registry.Column("External-IP", "string", corev1.NodeStatus{}.SwaggerDoc()["addresses"])),
	registry.Wide(registry.Column("OS-Image", "string", corev1.NodeSystemInfo{}.SwaggerDoc()["osImage"])),
	registry.Wide(registry.Column("Kernel-Version", "string", corev1.NodeSystemInfo{}.SwaggerDoc()["kernelVersion"])),
	registry.Wide(registry.Column("Container-Runtime", "string", corev1.NodeSystemInfo{}.SwaggerDoc()["containerRuntimeVersion"])),
}

func nodeCells(o runtime.Object) []any {
	n := o.(*corev1.Node)
	status := []string{"Unknown"}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			status[0] = "NotReady"
			if c.Status == corev1.ConditionTrue {
				status[0] = "Ready"
			}
		}
	}
	if n.Spec.Unschedulable {
		status = append(status, "SchedulingDisabled")
	}
	roles := sets.New[string]()
	for k, v := range n.Labels {
		switch {
		case strings.HasPrefix(k, "node-role.kubernetes.io/") && len(k) > len("node-role.kubernetes.io/"):
			roles.Insert(strings.TrimPrefix(k, "node-role.kubernetes.io/"))
		case k == "kubernetes.io/role" && v != "":
			roles.Insert(v)
		}
	}
	address := func(t corev1.NodeAddressType) string {
		for _, a := range n.Status.Addresses {
			if a.Type == t {
				return a.Address
			}
		}
		return "<none>"
	}
	info := n.Status.NodeInfo
	unknown := func(s string) string {
		if s == "" {
			return "<unknown>"
		}
		return s
	}
	kernel := unknown(info.KernelVersion)
	if info.Architecture != "" {
		kernel += " (" + info.Architecture + ")"
	}
	return []any{strings.Join(status, ","), registry.OrNone(strings.Join(sets.List(roles), ",")), registry.AgeCell(o), info.KubeletVersion,
		address(corev1.NodeInternalIP), address(corev1.NodeExternalIP), unknown(info.OSImage), kernel, unknown(info.ContainerRuntimeVersion)}
}
