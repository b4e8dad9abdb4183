package scheduling

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/apichain/apichain/pkg/registry"
	"github.com/apichain/apichain/services/core/builtin/validate"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

const (
	systemPriorityPrefix         = "system-"
	highestUserDefinablePriority = 1000000000
	systemCriticalPriority       = 2 * highestUserDefinablePriority
)

// SystemPriorityClasses are the two a bare kube-apiserver makes at start
// (scheduling/bootstrap-system-priority-classes) and keeps from being deleted.
func SystemPriorityClasses() []*schedulingv1.PriorityClass {
	return []*schedulingv1.PriorityClass{
		{ObjectMeta: metav1.ObjectMeta{Name: "system-node-critical"}, Value: systemCriticalPriority + 1000,
			Description: "Used for system critical pods that must not be moved from their current node."},
		{ObjectMeta: metav1.ObjectMeta{Name: "system-cluster-critical"}, Value: systemCriticalPriority,
			Description: "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary."},
	}
}

// priorityClasses are scheduling.k8s.io/v1 PriorityClasses with kube's defaults, validation,
// columns and protected system classes.
func priorityClasses() *registry.Resource {
	return &registry.Resource{GroupVersion: schedulingv1.SchemeGroupVersion, Name: "priorityclasses", SingularName: "priorityclass",
		Kind: "PriorityClass", ShortNames: []string{"pc"},
		New: registry.Of[schedulingv1.PriorityClass](), NewList: registry.Of[schedulingv1.PriorityClassList](),
		PrepareForCreate: func(_ context.Context, o runtime.Object) { o.(*schedulingv1.PriorityClass).Generation = 1 },
		Validate:         func(o runtime.Object) field.ErrorList { return validatePriorityClass(o.(*schedulingv1.PriorityClass)) },
		ValidateUpdate: func(o, old runtime.Object) field.ErrorList {
			pc, prev := o.(*schedulingv1.PriorityClass), old.(*schedulingv1.PriorityClass)
			errs := validatePriorityClass(pc)
			if pc.Value != prev.Value {
				errs = append(errs, field.Forbidden(field.NewPath("value"), "may not be changed in an update."))
			}
			if ptr.Deref(pc.PreemptionPolicy, "") != ptr.Deref(prev.PreemptionPolicy, "") {
				errs = append(errs, field.Invalid(field.NewPath("preemptionPolicy"), pc.PreemptionPolicy, validate.FieldImmutableErrorMsg))
			}
			return errs
		},
		ValidateDelete: func(name string) error {
			for _, spc := range SystemPriorityClasses() {
				if spc.Name == name {
					return apierrors.NewForbidden(schedulingv1.Resource("priorityclasses"), name, errors.New("this is a system priority class and cannot be deleted"))
				}
			}
			return nil
		},
		Columns: []metav1.TableColumnDefinition{
			registry.Column("Value", "integer", "Value is the integer value of this priority class."),
			registry.Column("Global-Default", "boolean", "GlobalDefault specifies whether this PriorityClass should be considered as the default priority."),
			registry.AgeColumn,
			registry.Column("PreemptionPolicy", "string", "PreemptionPolicy is the Policy for preempting pods with lower priority."),
		},
		Cells: func(o runtime.Object) []any {
			pc := o.(*schedulingv1.PriorityClass)
			policy := ""
			if pc.PreemptionPolicy != nil {
				policy = string(*pc.PreemptionPolicy)
			}
			return []any{int64(pc.Value), pc.GlobalDefault, registry.AgeCell(o), policy}
		},
	}
}

// validatePriorityClass is kube's ValidatePriorityClass.
func validatePriorityClass(pc *schedulingv1.PriorityClass) field.ErrorList {
	var errs field.ErrorList
	if strings.HasPrefix(pc.Name, systemPriorityPrefix) {
		if err := knownSystemPriorityClass(pc); err != nil {
			errs = append(errs, field.Forbidden(field.NewPath("metadata", "name"),
				"priority class names with '"+systemPriorityPrefix+"' prefix are reserved for system use only. error: "+err.Error()))
		}
	} else if pc.Value > highestUserDefinablePriority {
		errs = append(errs, field.Forbidden(field.NewPath("value"), fmt.Sprintf("maximum allowed value of a user defined priority is %v", highestUserDefinablePriority)))
	}
	if p := pc.PreemptionPolicy; p != nil && *p != corev1.PreemptLowerPriority && *p != corev1.PreemptNever {
		errs = append(errs, field.NotSupported(field.NewPath("preemptionPolicy"), *p, []string{string(corev1.PreemptLowerPriority), string(corev1.PreemptNever)}))
	}
	return errs
}

func knownSystemPriorityClass(pc *schedulingv1.PriorityClass) error {
	for _, spc := range SystemPriorityClasses() {
		if spc.Name != pc.Name {
			continue
		}
		if spc.Value != pc.Value {
			return fmt.Errorf("value of %v PriorityClass must be %v", spc.Name, spc.Value)
		}
		if spc.GlobalDefault != pc.GlobalDefault {
			return fmt.Errorf("globalDefault of %v PriorityClass must be %v", spc.Name, spc.GlobalDefault)
		}
		return nil
	}
	return fmt.Errorf("%v is not a known system priority class", pc.Name)
}
