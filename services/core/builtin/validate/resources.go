package validate

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var standardContainerResources = sets.New(string(corev1.ResourceCPU), string(corev1.ResourceMemory), string(corev1.ResourceEphemeralStorage))

// StandardResources are kube's standard resource names (its IsStandardResourceName).
var StandardResources = sets.New("cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.ephemeral-storage",
	"limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods", "services", "replicationcontrollers", "resourcequotas",
	"secrets", "configmaps", "persistentvolumeclaims", "storage", "requests.storage", "services.nodeports", "services.loadbalancers")

func LimitResourceName(t corev1.LimitType, name corev1.ResourceName, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, InvalidEach(p, name, validation.IsQualifiedName(string(name)))...)
	if len(errs) > 0 {
		return errs
	}
	qualified := strings.Contains(string(name), "/")
	if t != corev1.LimitTypePod && t != corev1.LimitTypeContainer {
		if !qualified && !StandardResources.Has(string(name)) && !strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) {
			errs = append(errs, field.Invalid(p, name, "must be a standard resource type or fully qualified"))
		}
		return errs
	}
	if !qualified && !StandardResources.Has(string(name)) && !strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) {
		return append(errs, field.Invalid(p, name, "must be a standard resource type or fully qualified"))
	}
	switch {
	case !qualified:
		if !standardContainerResources.Has(string(name)) && !strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) {
			errs = append(errs, field.Invalid(p, name, "must be a standard resource for containers"))
		}
	case !nativeResource(name) && !extendedResource(name):
		errs = append(errs, field.Invalid(p, name, "doesn't follow extended resource name standard"))
	}
	return errs
}

func nativeResource(name corev1.ResourceName) bool {
	return !strings.Contains(string(name), "/") || strings.Contains(string(name), corev1.ResourceDefaultNamespacePrefix)
}

func extendedResource(name corev1.ResourceName) bool {
	if nativeResource(name) || strings.HasPrefix(string(name), corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+string(name))) == 0
}

// overcommitAllowed: hugepages and extended resources cannot be overcommitted.
func OvercommitAllowed(name corev1.ResourceName) bool {
	return nativeResource(name) && !strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}
