package builtin

import (
	"context"
	"fmt"
	"strings"

	"github.com/apichain/apichain/pkg/registry"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func col(name, typ, desc string) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: typ, Description: desc}
}

// --- configmaps and secrets: key names, the 1 MiB size limit, immutable.

const maxDataSize = 1 << 20

func validateKeys(path *field.Path, keys []string, size int) field.ErrorList {
	var errs field.ErrorList
	for _, k := range keys {
		for _, msg := range validation.IsConfigMapKey(k) {
			errs = append(errs, field.Invalid(path.Key(k), k, msg))
		}
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

var configMapColumns = []metav1.TableColumnDefinition{col("Data", "string", corev1.ConfigMap{}.SwaggerDoc()["data"]), registry.AgeColumn}

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
	return validateKeys(field.NewPath("data"), keys, size)
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

func secretFields(o runtime.Object) fields.Set {
	return fields.Set{"type": string(o.(*corev1.Secret).Type)}
}

var secretColumns = []metav1.TableColumnDefinition{
	col("Type", "string", corev1.Secret{}.SwaggerDoc()["type"]),
	col("Data", "string", corev1.Secret{}.SwaggerDoc()["data"]),
	registry.AgeColumn,
}

func secretCells(o runtime.Object) []any {
	s := o.(*corev1.Secret)
	return []any{string(s.Type), int64(len(s.Data)), registry.AgeCell(o)}
}

var serviceAccountColumns = []metav1.TableColumnDefinition{col("Secrets", "string", corev1.ServiceAccount{}.SwaggerDoc()["secrets"]), registry.AgeColumn}

func serviceAccountCells(o runtime.Object) []any {
	return []any{int64(len(o.(*corev1.ServiceAccount).Secrets)), registry.AgeCell(o)}
}

func eventFields(o runtime.Object) fields.Set {
	e := o.(*corev1.Event)
	return fields.Set{
		"involvedObject.kind": e.InvolvedObject.Kind, "involvedObject.namespace": e.InvolvedObject.Namespace,
		"involvedObject.name": e.InvolvedObject.Name, "involvedObject.uid": string(e.InvolvedObject.UID),
		"involvedObject.apiVersion": e.InvolvedObject.APIVersion, "involvedObject.resourceVersion": e.InvolvedObject.ResourceVersion,
		"involvedObject.fieldPath": e.InvolvedObject.FieldPath, "reason": e.Reason, "reportingComponent": e.ReportingController,
		"source": e.Source.Component, "type": e.Type,
	}
}

// --- services and pods: the defaults kubectl output relies on.

func validateService(o runtime.Object) field.ErrorList {
	s := o.(*corev1.Service)
	var errs field.ErrorList
	if len(s.Spec.Ports) == 0 && s.Spec.Type != corev1.ServiceTypeExternalName && s.Spec.ClusterIP != corev1.ClusterIPNone {
		errs = append(errs, field.Required(field.NewPath("spec", "ports"), ""))
	}
	for i, p := range s.Spec.Ports {
		if p.Port < 1 || p.Port > 65535 {
			errs = append(errs, field.Invalid(field.NewPath("spec", "ports").Index(i).Child("port"), p.Port, "must be between 1 and 65535, inclusive"))
		}
	}
	return errs
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

func podFields(o runtime.Object) fields.Set {
	p := o.(*corev1.Pod)
	return fields.Set{"spec.nodeName": p.Spec.NodeName, "spec.restartPolicy": string(p.Spec.RestartPolicy),
		"spec.schedulerName": p.Spec.SchedulerName, "spec.serviceAccountName": p.Spec.ServiceAccountName,
		"spec.hostNetwork": fmt.Sprint(p.Spec.HostNetwork), "status.phase": string(p.Status.Phase),
		"status.podIP": p.Status.PodIP, "status.nominatedNodeName": p.Status.NominatedNodeName}
}

var podColumns = []metav1.TableColumnDefinition{
	col("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
	col("Status", "string", "The aggregate status of the containers in this pod."),
	col("Restarts", "string", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
	registry.AgeColumn,
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
	return []any{fmt.Sprintf("%d/%d", ready, len(p.Spec.Containers)), reason, restarts, registry.AgeCell(o)}
}

var leaseColumns = []metav1.TableColumnDefinition{col("Holder", "string", coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"]), registry.AgeColumn}

func leaseCells(o runtime.Object) []any {
	l := o.(*coordinationv1.Lease)
	holder := ""
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	return []any{holder, registry.AgeCell(o)}
}

// --- Table columns kubectl shows for workloads, services, nodes and events.

var deploymentColumns = []metav1.TableColumnDefinition{
	col("Ready", "string", "Number of the pod with ready state"),
	col("Up-to-date", "integer", appsv1.DeploymentStatus{}.SwaggerDoc()["updatedReplicas"]),
	col("Available", "integer", appsv1.DeploymentStatus{}.SwaggerDoc()["availableReplicas"]),
	registry.AgeColumn,
}

func replicas(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}

func deploymentCells(o runtime.Object) []any {
	d := o.(*appsv1.Deployment)
	return []any{fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, replicas(d.Spec.Replicas)), int64(d.Status.UpdatedReplicas),
		int64(d.Status.AvailableReplicas), registry.AgeCell(o)}
}

var replicaSetColumns = []metav1.TableColumnDefinition{
	col("Desired", "integer", appsv1.ReplicaSetSpec{}.SwaggerDoc()["replicas"]),
	col("Current", "integer", appsv1.ReplicaSetStatus{}.SwaggerDoc()["replicas"]),
	col("Ready", "integer", appsv1.ReplicaSetStatus{}.SwaggerDoc()["readyReplicas"]),
	registry.AgeColumn,
}

func replicaSetCells(o runtime.Object) []any {
	r := o.(*appsv1.ReplicaSet)
	return []any{int64(replicas(r.Spec.Replicas)), int64(r.Status.Replicas), int64(r.Status.ReadyReplicas), registry.AgeCell(o)}
}

var statefulSetColumns = []metav1.TableColumnDefinition{
	col("Ready", "string", "Number of the pod with ready state"),
	registry.AgeColumn,
}

func statefulSetCells(o runtime.Object) []any {
	s := o.(*appsv1.StatefulSet)
	return []any{fmt.Sprintf("%d/%d", s.Status.ReadyReplicas, replicas(s.Spec.Replicas)), registry.AgeCell(o)}
}

var daemonSetColumns = []metav1.TableColumnDefinition{
	col("Desired", "integer", appsv1.DaemonSetStatus{}.SwaggerDoc()["desiredNumberScheduled"]),
	col("Current", "integer", appsv1.DaemonSetStatus{}.SwaggerDoc()["currentNumberScheduled"]),
	col("Ready", "integer", appsv1.DaemonSetStatus{}.SwaggerDoc()["numberReady"]),
	col("Up-to-date", "integer", appsv1.DaemonSetStatus{}.SwaggerDoc()["updatedNumberScheduled"]),
	col("Available", "integer", appsv1.DaemonSetStatus{}.SwaggerDoc()["numberAvailable"]),
	registry.AgeColumn,
}

func daemonSetCells(o runtime.Object) []any {
	d := o.(*appsv1.DaemonSet)
	return []any{int64(d.Status.DesiredNumberScheduled), int64(d.Status.CurrentNumberScheduled), int64(d.Status.NumberReady),
		int64(d.Status.UpdatedNumberScheduled), int64(d.Status.NumberAvailable), registry.AgeCell(o)}
}

var serviceColumns = []metav1.TableColumnDefinition{
	col("Type", "string", corev1.ServiceSpec{}.SwaggerDoc()["type"]),
	col("Cluster-IP", "string", corev1.ServiceSpec{}.SwaggerDoc()["clusterIP"]),
	col("External-IP", "string", corev1.ServiceSpec{}.SwaggerDoc()["externalIPs"]),
	col("Port(s)", "string", corev1.ServiceSpec{}.SwaggerDoc()["ports"]),
	registry.AgeColumn,
}

func serviceCells(o runtime.Object) []any {
	s := o.(*corev1.Service)
	clusterIP := s.Spec.ClusterIP
	if clusterIP == "" {
		clusterIP = "<none>"
	}
	external := "<none>"
	if len(s.Spec.ExternalIPs) > 0 {
		external = strings.Join(s.Spec.ExternalIPs, ",")
	}
	var ports []string
	for _, p := range s.Spec.Ports {
		ports = append(ports, fmt.Sprintf("%d/%s", p.Port, p.Protocol))
	}
	portText := strings.Join(ports, ",")
	if portText == "" {
		portText = "<none>"
	}
	return []any{string(s.Spec.Type), clusterIP, external, portText, registry.AgeCell(o)}
}

var nodeColumns = []metav1.TableColumnDefinition{
	col("Status", "string", "The status of the node"),
	registry.AgeColumn,
}

func nodeCells(o runtime.Object) []any {
	n := o.(*corev1.Node)
	status := "Unknown"
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			status = "NotReady"
			if c.Status == corev1.ConditionTrue {
				status = "Ready"
			}
		}
	}
	return []any{status, registry.AgeCell(o)}
}
