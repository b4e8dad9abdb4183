// Package apps is the apps/v1 group as core serves it: Deployments, ReplicaSets,
// StatefulSets, DaemonSets and ControllerRevisions, with their defaults, validation and columns.
package apps

import (
	"context"
	"strconv"

	"github.com/apichain/apichain/pkg/registry"
	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Resources are the group's resources in kube's order.
func Resources() []*registry.Resource {
	gv := appsv1.SchemeGroupVersion
	return []*registry.Resource{
		{GroupVersion: gv, Name: "deployments", SingularName: "deployment", Kind: "Deployment", Namespaced: true,
			ShortNames: []string{"deploy"}, Categories: []string{"all"}, Subresources: []string{"scale", "status"}, HasSpec: true,
			ResetStatusMeta: func(next, old metav1.Object) { next.SetLabels(old.GetLabels()) }, // kube's deployment status strategy
			New:             registry.Of[appsv1.Deployment](), NewList: registry.Of[appsv1.DeploymentList](), Validate: validateDeployment,
			PrepareForUpdate: func(o, old runtime.Object) {
				// kube bumps a deployment's generation on annotation changes too: they are
				// copied to its replica sets.
				d, prev := o.(*appsv1.Deployment), old.(*appsv1.Deployment)
				if d.Generation == prev.Generation && !apiequality.Semantic.DeepEqual(d.Annotations, prev.Annotations) {
					d.Generation++
				}
			},
			ValidateUpdate: func(o, old runtime.Object) field.ErrorList {
				return immutableSelector(o.(*appsv1.Deployment).Spec.Selector, old.(*appsv1.Deployment).Spec.Selector)
			},
			Columns: deploymentColumns, Cells: deploymentCells},
		{GroupVersion: gv, Name: "replicasets", SingularName: "replicaset", Kind: "ReplicaSet", Namespaced: true,
			ShortNames: []string{"rs"}, Categories: []string{"all"}, Subresources: []string{"scale", "status"}, HasSpec: true,
			New: registry.Of[appsv1.ReplicaSet](), NewList: registry.Of[appsv1.ReplicaSetList](), Validate: validateReplicaSet,
			ValidateUpdate: func(o, old runtime.Object) field.ErrorList {
				return immutableSelector(o.(*appsv1.ReplicaSet).Spec.Selector, old.(*appsv1.ReplicaSet).Spec.Selector)
			},
			Columns: replicaSetColumns, Cells: replicaSetCells},
		{GroupVersion: gv, Name: "statefulsets", SingularName: "statefulset", Kind: "StatefulSet", Namespaced: true,
			ShortNames: []string{"sts"}, Categories: []string{"all"}, Subresources: []string{"scale", "status"}, HasSpec: true,
			New: registry.Of[appsv1.StatefulSet](), NewList: registry.Of[appsv1.StatefulSetList](), Validate: validateStatefulSet,
			ValidateUpdate: validateStatefulSetUpdate, Columns: statefulSetColumns, Cells: statefulSetCells},
		{GroupVersion: gv, Name: "daemonsets", SingularName: "daemonset", Kind: "DaemonSet", Namespaced: true,
			ShortNames: []string{"ds"}, Categories: []string{"all"}, Subresources: []string{"status"}, HasSpec: true,
			New: registry.Of[appsv1.DaemonSet](), NewList: registry.Of[appsv1.DaemonSetList](), Validate: validateDaemonSet,
			PrepareForCreate: func(_ context.Context, o runtime.Object) { setTemplateGeneration(o.(*appsv1.DaemonSet), 1) },
			PrepareForUpdate: func(o, old runtime.Object) {
				d, prev := o.(*appsv1.DaemonSet), old.(*appsv1.DaemonSet)
				gen, _ := strconv.ParseInt(prev.Annotations[daemonSetTemplateGeneration], 10, 64)
				if !apiequality.Semantic.DeepEqual(d.Spec.Template, prev.Spec.Template) {
					gen++
				}
				setTemplateGeneration(d, gen)
			},
			ValidateUpdate: func(o, old runtime.Object) field.ErrorList {
				return immutableSelector(o.(*appsv1.DaemonSet).Spec.Selector, old.(*appsv1.DaemonSet).Spec.Selector)
			},
			Columns: daemonSetColumns, Cells: daemonSetCells},
		controllerRevisions(),
	}
}

// daemonSetTemplateGeneration is where apps/v1 keeps the template generation kube counts.
const daemonSetTemplateGeneration = "deprecated.daemonset.template.generation"

func setTemplateGeneration(d *appsv1.DaemonSet, gen int64) {
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	d.Annotations[daemonSetTemplateGeneration] = strconv.FormatInt(gen, 10)
}
