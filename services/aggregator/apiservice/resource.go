// Package apiservice is the aggregator's apiregistration.k8s.io/v1 APIServices: the resource
// with kube's validation and columns, the registration of the local group/versions (kube's
// autoregister and crd-autoregistration) and the Available condition.
package apiservice

import (
	"fmt"
	"strings"

	"github.com/apichain/apichain/pkg/apiregistration"
	"github.com/apichain/apichain/pkg/registry"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// Resource is apiregistration.k8s.io/v1 apiservices, cluster-scoped, with a status.
func Resource() *registry.Resource {
	return &registry.Resource{GroupVersion: apiregistration.SchemeGroupVersion, Name: "apiservices", SingularName: "apiservice",
		Kind: "APIService", StoragePrefix: "apiregistration.k8s.io/apiservices", StorageMediaType: registry.MediaJSON, Categories: []string{"api-extensions"}, Subresources: []string{"status"}, HasSpec: true, NoGeneration: true,
		ResetStatusMeta: metav1.ResetObjectMetaForStatus,
		New:             func() runtime.Object { return &apiregistration.APIService{} },
		NewList:         func() runtime.Object { return &apiregistration.APIServiceList{} },
		ValidateName:    path.ValidatePathSegmentName,
		Default: func(o runtime.Object) {
			if s := o.(*apiregistration.APIService).Spec.Service; s != nil && s.Port == nil {
				s.Port = ptr.To[int32](443)
			}
		},
		Validate: func(o runtime.Object) field.ErrorList { return validate(o.(*apiregistration.APIService)) },
		ValidateUpdate: func(o, _ runtime.Object) field.ErrorList {
			a := o.(*apiregistration.APIService)
			return append(validate(a), validateStatus(&a.Status)...)
		},
		Columns: []metav1.TableColumnDefinition{
			{Name: "Service", Type: "string", Description: "The reference to the service that hosts this API endpoint."},
			{Name: "Available", Type: "string", Description: "Whether this service is available."},
		},
		Cells: func(o runtime.Object) []any {
			a := o.(*apiregistration.APIService)
			return []any{serviceCell(a), availableCell(a)}
		},
	}
}

// serviceCell is "Local" or "namespace/name".
func serviceCell(a *apiregistration.APIService) string {
	if s := a.Spec.Service; s != nil {
		return s.Namespace + "/" + s.Name
	}
	return "Local"
}

// availableCell is the Available status, with the reason when it is not True.
func availableCell(a *apiregistration.APIService) string {
	c := a.Status.AvailableCondition()
	switch {
	case c == nil:
		return string(apiregistration.ConditionUnknown)
	case c.Status != apiregistration.ConditionTrue && c.Reason != "":
		return fmt.Sprintf("%s (%s)", c.Status, c.Reason)
	}
	return string(c.Status)
}

// validate is kube's ValidateAPIService (after the generic metadata checks).
func validate(a *apiregistration.APIService) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if required := a.Spec.Version + "." + a.Spec.Group; a.Name != required && len(path.IsValidPathSegmentName(a.Name)) == 0 {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), a.Name, fmt.Sprintf("must be `spec.version+\".\"+spec.group`: %q", required)))
	}
	if a.Spec.Group == "" && a.Spec.Version != "v1" {
		errs = append(errs, field.Required(spec.Child("group"), "only v1 may have an empty group and it better be legacy kube"))
	}
	if a.Spec.Group != "" {
		for _, msg := range validation.IsDNS1123Subdomain(a.Spec.Group) {
			errs = append(errs, field.Invalid(spec.Child("group"), a.Spec.Group, msg))
		}
	}
	for _, msg := range validation.IsDNS1035Label(a.Spec.Version) {
		errs = append(errs, field.Invalid(spec.Child("version"), a.Spec.Version, msg))
	}
	if p := a.Spec.GroupPriorityMinimum; p <= 0 || p > 20000 {
		errs = append(errs, field.Invalid(spec.Child("groupPriorityMinimum"), p, "must be positive and less than 20000"))
	}
	if p := a.Spec.VersionPriority; p <= 0 || p > 1000 {
		errs = append(errs, field.Invalid(spec.Child("versionPriority"), p, "must be positive and less than 1000"))
	}
	s := a.Spec.Service
	if s == nil {
		if len(a.Spec.CABundle) != 0 {
			errs = append(errs, field.Invalid(spec.Child("caBundle"), fmt.Sprintf("%d bytes", len(a.Spec.CABundle)), "local APIServices may not have a caBundle"))
		}
		if a.Spec.InsecureSkipTLSVerify {
			errs = append(errs, field.Invalid(spec.Child("insecureSkipTLSVerify"), true, "local APIServices may not have insecureSkipTLSVerify"))
		}
		return errs
	}
	if s.Namespace == "" {
		errs = append(errs, field.Required(spec.Child("service", "namespace"), ""))
	}
	if s.Name == "" {
		errs = append(errs, field.Required(spec.Child("service", "name"), ""))
	}
	if msgs := validation.IsValidPortNum(int(ptr.Deref(s.Port, 0))); msgs != nil {
		errs = append(errs, field.Invalid(spec.Child("service", "port"), s.Port, "port is not valid: "+strings.Join(msgs, ", ")))
	}
	if a.Spec.InsecureSkipTLSVerify && len(a.Spec.CABundle) > 0 {
		errs = append(errs, field.Invalid(spec.Child("insecureSkipTLSVerify"), true, "may not be true if caBundle is present"))
	}
	return errs
}

// validateStatus is kube's ValidateAPIServiceStatus.
func validateStatus(s *apiregistration.APIServiceStatus) field.ErrorList {
	var errs field.ErrorList
	for i, c := range s.Conditions {
		switch c.Status {
		case apiregistration.ConditionTrue, apiregistration.ConditionFalse, apiregistration.ConditionUnknown:
		default:
			errs = append(errs, field.NotSupported(field.NewPath("status", "conditions").Index(i).Child("status"), c.Status,
				[]string{string(apiregistration.ConditionTrue), string(apiregistration.ConditionFalse), string(apiregistration.ConditionUnknown)}))
		}
	}
	return errs
}
