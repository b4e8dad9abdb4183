package core

import (
	"strconv"

	"github.com/apichain/apichain/pkg/registry"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
)

// The field selectors of core/v1's kinds: the labels kube's conversion functions accept
// (k8s.io/kubernetes/pkg/apis/core/v1/conversion.go) and the values its registries' GetAttrs
// give them. Kinds not named here have kube's default, metadata.name and metadata.namespace.

var podFieldLabels = registry.SupportedFieldLabels("metadata.name", "metadata.namespace", "spec.nodeName", "spec.restartPolicy",
	"spec.schedulerName", "spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP", "status.podIPs",
	"status.nominatedNodeName")

// podFieldLabelConversion also takes spec.host, kube's old name of spec.nodeName. status.podIPs
// is accepted and has no value, as in kube.
func podFieldLabelConversion(label, value string) (string, string, error) {
	if label == "spec.host" {
		return "spec.nodeName", value, nil
	}
	return podFieldLabels(label, value)
}

func podFields(o runtime.Object) fields.Set {
	p := o.(*corev1.Pod)
	return fields.Set{"spec.nodeName": p.Spec.NodeName, "spec.restartPolicy": string(p.Spec.RestartPolicy),
		"spec.schedulerName": p.Spec.SchedulerName, "spec.serviceAccountName": p.Spec.ServiceAccountName,
		"spec.hostNetwork": strconv.FormatBool(p.Spec.HostNetwork), "status.phase": string(p.Status.Phase),
		"status.podIP": p.Status.PodIP, "status.nominatedNodeName": p.Status.NominatedNodeName}
}

var nodeFieldLabels = registry.SupportedFieldLabels("metadata.name", "spec.unschedulable")

func nodeFields(o runtime.Object) fields.Set {
	return fields.Set{"spec.unschedulable": strconv.FormatBool(o.(*corev1.Node).Spec.Unschedulable)}
}

var replicationControllerFieldLabels = registry.SupportedFieldLabels("metadata.name", "metadata.namespace", "status.replicas")

func replicationControllerFields(o runtime.Object) fields.Set {
	return fields.Set{"status.replicas": strconv.Itoa(int(o.(*corev1.ReplicationController).Status.Replicas))}
}

var secretFieldLabels = registry.SupportedFieldLabels("type", "metadata.namespace", "metadata.name")

func secretFields(o runtime.Object) fields.Set {
	return fields.Set{"type": string(o.(*corev1.Secret).Type)}
}

var serviceFieldLabels = registry.SupportedFieldLabels("metadata.namespace", "metadata.name", "spec.clusterIP", "spec.type")

func serviceFields(o runtime.Object) fields.Set {
	s := o.(*corev1.Service)
	return fields.Set{"spec.clusterIP": s.Spec.ClusterIP, "spec.type": string(s.Spec.Type)}
}

var eventFieldLabels = registry.SupportedFieldLabels("metadata.name", "metadata.namespace", "involvedObject.kind", "involvedObject.namespace",
	"involvedObject.name", "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
	"involvedObject.fieldPath", "reason", "reportingComponent", "source", "type")

// EventFields are an Event's values, also those of events.k8s.io/v1's Events (stored as core
// Events); source is the reporting controller of an event that names no source component, as
// kube gives it.
func EventFields(o runtime.Object) fields.Set {
	e := o.(*corev1.Event)
	ref, source := e.InvolvedObject, e.Source.Component
	if source == "" {
		source = e.ReportingController
	}
	return fields.Set{
		"involvedObject.kind": ref.Kind, "involvedObject.namespace": ref.Namespace, "involvedObject.name": ref.Name,
		"involvedObject.uid": string(ref.UID), "involvedObject.apiVersion": ref.APIVersion,
		"involvedObject.resourceVersion": ref.ResourceVersion, "involvedObject.fieldPath": ref.FieldPath,
		"reason": e.Reason, "reportingComponent": e.ReportingController, "source": source, "type": e.Type,
	}
}
