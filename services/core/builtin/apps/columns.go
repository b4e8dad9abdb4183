package apps

import (
	"fmt"

	"github.com/apichain/apichain/pkg/registry"
	"github.com/apichain/apichain/services/core/builtin/core"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

var deploymentColumns = []metav1.TableColumnDefinition{
	registry.Column("Ready", "string", "Number of the pod with ready state"),
	registry.Column("Up-to-date", "string", appsv1.DeploymentStatus{}.SwaggerDoc()["updatedReplicas"]),
	registry.Column("Available", "string", appsv1.DeploymentStatus{}.SwaggerDoc()["availableReplicas"]),
	registry.AgeColumn,
	registry.Wide(registry.Column("Containers", "string", "Names of each container in the template.")),
	registry.Wide(registry.Column("Images", "string", "Images referenced by each container in the template.")),
	registry.Wide(registry.Column("Selector", "string", appsv1.DeploymentSpec{}.SwaggerDoc()["selector"])),
}

func replicas(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}

func deploymentCells(o runtime.Object) []any {
	d := o.(*appsv1.Deployment)
	names, images := core.ContainerCells(d.Spec.Template.Spec.Containers)
	return []any{fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, replicas(d.Spec.Replicas)), int64(d.Status.UpdatedReplicas),
		int64(d.Status.AvailableReplicas), registry.AgeCell(o), names, images, metav1.FormatLabelSelector(d.Spec.Selector)}
}

var replicaSetColumns = []metav1.TableColumnDefinition{
	registry.Column("Desired", "integer", appsv1.ReplicaSetSpec{}.SwaggerDoc()["replicas"]),
	registry.Column("Current", "integer", appsv1.ReplicaSetStatus{}.SwaggerDoc()["replicas"]),
	registry.Column("Ready", "integer", appsv1.ReplicaSetStatus{}.SwaggerDoc()["readyReplicas"]),
	registry.AgeColumn,
	registry.Wide(registry.Column("Containers", "string", "Names of each container in the template.")),
	registry.Wide(registry.Column("Images", "string", "Images referenced by each container in the template.")),
	registry.Wide(registry.Column("Selector", "string", appsv1.ReplicaSetSpec{}.SwaggerDoc()["selector"])),
}

func replicaSetCells(o runtime.Object) []any {
	r := o.(*appsv1.ReplicaSet)
	names, images := core.ContainerCells(r.Spec.Template.Spec.Containers)
	return []any{int64(replicas(r.Spec.Replicas)), int64(r.Status.Replicas), int64(r.Status.ReadyReplicas), registry.AgeCell(o),
		names, images, metav1.FormatLabelSelector(r.Spec.Selector)}
}

var statefulSetColumns = []metav1.TableColumnDefinition{
	registry.Column("Ready", "string", "Number of the pod with ready state"),
	registry.AgeColumn,
	registry.Wide(registry.Column("Containers", "string", "Names of each container in the template.")),
	registry.Wide(registry.Column("Images", "string", "Images referenced by each container in the template.")),
}

func statefulSetCells(o runtime.Object) []any {
	s := o.(*appsv1.StatefulSet)
	names, images := core.ContainerCells(s.Spec.Template.Spec.Containers)
	return []any{fmt.Sprintf("%d/%d", s.Status.ReadyReplicas, replicas(s.Spec.Replicas)), registry.AgeCell(o), names, images}
}

var daemonSetColumns = []metav1.TableColumnDefinition{
	registry.Column("Desired", "integer", appsv1.DaemonSetStatus{}.SwaggerDoc()["desiredNumberScheduled"]),
	registry.Column("Current", "integer", appsv1.DaemonSetStatus{}.SwaggerDoc()["currentNumberScheduled"]),
	registry.Column("Ready", "integer", appsv1.DaemonSetStatus{}.SwaggerDoc()["numberReady"]),
	registry.Column("Up-to-date", "integer", appsv1.DaemonSetStatus{}.SwaggerDoc()["updatedNumberScheduled"]),
	registry.Column("Available", "integer", appsv1.DaemonSetStatus{}.SwaggerDoc()["numberAvailable"]),
	registry.Column("Node Selector", "string", corev1.PodSpec{}.SwaggerDoc()["nodeSelector"]),
	registry.AgeColumn,
	registry.Wide(registry.Column("Containers", "string", "Names of each container in the template.")),
	registry.Wide(registry.Column("Images", "string", "Images referenced by each container in the template.")),
	registry.Wide(registry.Column("Selector", "string", appsv1.DaemonSetSpec{}.SwaggerDoc()["selector"])),
}

func daemonSetCells(o runtime.Object) []any {
	d := o.(*appsv1.DaemonSet)
	names, images := core.ContainerCells(d.Spec.Template.Spec.Containers)
	return []any{int64(d.Status.DesiredNumberScheduled), int64(d.Status.CurrentNumberScheduled), int64(d.Status.NumberReady),
		int64(d.Status.UpdatedNumberScheduled), int64(d.Status.NumberAvailable), labels.FormatLabels(d.Spec.Template.Spec.NodeSelector),
		registry.AgeCell(o), names, images, metav1.FormatLabelSelector(d.Spec.Selector)}
}
