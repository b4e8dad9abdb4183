package core

import (
	"encoding/json"
	"strings"

	"github.com/apichain/apichain/services/core/builtin/validate"
	"github.com/pmezard/go-difflib/difflib"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// containerCells are the Containers and Images cells of a workload's wide output.
func ContainerCells(cs []corev1.Container) (names, images string) {
	var n, im []string
	for _, c := range cs {
		n, im = append(n, c.Name), append(im, c.Image)
	}
	return strings.Join(n, ","), strings.Join(im, ",")
}

func validatePod(o runtime.Object) field.ErrorList {
	return validate.PodSpec(&o.(*corev1.Pod).Spec, field.NewPath("spec"))
}

// validatePodUpdate: a pod's spec changes only in its images, its deadline, added tolerations
// and a negative grace period set to 1 (resources and ephemeral containers change through their
// subresources), as kube allows; the refusal shows what changed.
func validatePodUpdate(o, old runtime.Object) field.ErrorList {
	spec, prev := o.(*corev1.Pod).Spec.DeepCopy(), &old.(*corev1.Pod).Spec
	for _, lists := range [][2][]corev1.Container{{spec.Containers, prev.Containers}, {spec.InitContainers, prev.InitContainers}} {
		for i := range lists[0] {
			if i < len(lists[1]) {
				lists[0][i].Image = lists[1][i].Image
				lists[0][i].Resources, lists[0][i].ResizePolicy = lists[1][i].Resources, lists[1][i].ResizePolicy
			}
		}
	}
	spec.ActiveDeadlineSeconds = prev.ActiveDeadlineSeconds
	if containsTolerations(spec.Tolerations, prev.Tolerations) {
		spec.Tolerations = prev.Tolerations
	}
	if g, pg := spec.TerminationGracePeriodSeconds, prev.TerminationGracePeriodSeconds; g != nil && pg != nil && *pg < 0 && *g == 1 {
		spec.TerminationGracePeriodSeconds = pg
	}
	spec.EphemeralContainers = prev.EphemeralContainers
	if apiequality.Semantic.DeepEqual(spec, prev) {
		return nil
	}
	a, _ := json.MarshalIndent(prev, "", " ")
	b, _ := json.MarshalIndent(spec, "", " ")
	diff, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{A: difflib.SplitLines(string(a)), B: difflib.SplitLines(string(b)), Context: 3})
	return field.ErrorList{field.Forbidden(field.NewPath("spec"), podUpdateForbidden+"\n"+diff)}
}

// containsTolerations: every toleration of old is in tolerations.
func containsTolerations(tolerations, old []corev1.Toleration) bool {
	for _, o := range old {
		found := false
		for _, t := range tolerations {
			found = found || apiequality.Semantic.DeepEqual(o, t)
		}
		if !found {
			return false
		}
	}
	return true
}

// podUpdateForbidden is kube's message for a pod update that changes more than it may.
const podUpdateForbidden = "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`," +
	"`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations)," +
	"`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
