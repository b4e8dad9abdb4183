package dra

import (
	"fmt"
	"strings"
	"time"

	"github.com/apichain/apichain/pkg/registry"
	"github.com/apichain/apichain/services/core/builtin/validate"
	resourcev1 "k8s.io/api/resource/v1"
	resourcev1beta2 "k8s.io/api/resource/v1beta2"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// resource.k8s.io/v1: dynamic resource allocation's kinds. apichain stores and validates them;
// allocation is the scheduler's and the drivers' work.

func deviceClasses() *registry.Resource {
	return &registry.Resource{GroupVersion: resourcev1.SchemeGroupVersion, Name: "deviceclasses", SingularName: "deviceclass", Kind: "DeviceClass",
		HasSpec: true, New: registry.Of[resourcev1.DeviceClass](), NewList: registry.Of[resourcev1.DeviceClassList](),
		Validate: func(o runtime.Object) field.ErrorList {
			return validateSelectors(o.(*resourcev1.DeviceClass).Spec.Selectors, field.NewPath("spec", "selectors"))
		},
	}
}

func validateSelectors(sels []resourcev1.DeviceSelector, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, s := range sels {
		if s.CEL == nil {
			errs = append(errs, field.Required(p.Index(i).Child("cel"), ""))
		} else if s.CEL.Expression == "" {
			errs = append(errs, field.Required(p.Index(i).Child("cel", "expression"), ""))
		}
	}
	return errs
}

func resourceClaims() *registry.Resource {
	return &registry.Resource{GroupVersion: resourcev1.SchemeGroupVersion, Name: "resourceclaims", SingularName: "resourceclaim", Kind: "ResourceClaim",
		Namespaced: true, Subresources: []string{"status"}, HasSpec: true, NoGeneration: true, ResetStatusMeta: metav1.ResetObjectMetaForStatus,
		New: registry.Of[resourcev1.ResourceClaim](), NewList: registry.Of[resourcev1.ResourceClaimList](),
		Validate: func(o runtime.Object) field.ErrorList {
			return validateClaimSpec(&o.(*resourcev1.ResourceClaim).Spec, field.NewPath("spec"))
		},
		ValidateUpdate: func(o, old runtime.Object) field.ErrorList {
			if !apiequality.Semantic.DeepEqual(o.(*resourcev1.ResourceClaim).Spec, old.(*resourcev1.ResourceClaim).Spec) {
				return field.ErrorList{field.Invalid(field.NewPath("spec"), "<value omitted>", validate.FieldImmutableErrorMsg)}
			}
			return nil
		},
		Columns: []metav1.TableColumnDefinition{registry.Column("State", "string", "A summary of the current state (allocated, pending, reserved, etc.).")},
		Cells: func(o runtime.Object) []any {
			c := o.(*resourcev1.ResourceClaim)
			var states []string
			if c.DeletionTimestamp != nil {
				states = append(states, "deleted")
			}
			if c.Status.Allocation == nil {
				if c.DeletionTimestamp == nil {
					states = append(states, "pending")
				}
			} else {
				states = append(states, "allocated")
				if len(c.Status.ReservedFor) > 0 {
					states = append(states, "reserved")
				}
			}
			return []any{strings.Join(states, ",")}
		},
	}
}

func validateClaimSpec(s *resourcev1.ResourceClaimSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	rp := p.Child("devices", "requests")
	names := map[string]bool{}
	for i, r := range s.Devices.Requests {
		ip := rp.Index(i)
		errs = append(errs, validate.RequiredLabel(r.Name, ip.Child("name"))...)
		if names[r.Name] {
			errs = append(errs, field.Duplicate(ip.Child("name"), r.Name))
		}
		names[r.Name] = true
		switch {
		case r.Exactly == nil && len(r.FirstAvailable) == 0:
			errs = append(errs, field.Required(ip, "exactly one of `exactly` or `firstAvailable` is required"))
		case r.Exactly != nil && len(r.FirstAvailable) > 0:
			errs = append(errs, field.Invalid(ip, nil, "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set"))
		case r.Exactly != nil:
			errs = append(errs, validateExactRequest(r.Exactly.DeviceClassName, r.Exactly.AllocationMode, r.Exactly.Count, ip.Child("exactly"))...)
			errs = append(errs, validateSelectors(r.Exactly.Selectors, ip.Child("exactly", "selectors"))...)
		default:
			for j, sub := range r.FirstAvailable {
				sp := ip.Child("firstAvailable").Index(j)
				errs = append(errs, validate.RequiredLabel(sub.Name, sp.Child("name"))...)
				errs = append(errs, validateExactRequest(sub.DeviceClassName, sub.AllocationMode, sub.Count, sp)...)
				errs = append(errs, validateSelectors(sub.Selectors, sp.Child("selectors"))...)
			}
		}
	}
	return errs
}

func validateExactRequest(class string, mode resourcev1.DeviceAllocationMode, count int64, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if class == "" {
		errs = append(errs, field.Required(p.Child("deviceClassName"), ""))
	} else {
		errs = append(errs, validate.DNSSubdomain(class, p.Child("deviceClassName"))...)
	}
	switch mode {
	case resourcev1.DeviceAllocationModeAll:
		if count != 0 {
			errs = append(errs, field.Invalid(p.Child("count"), count, "must not be specified when allocationMode is 'All'"))
		}
	case resourcev1.DeviceAllocationModeExactCount:
		if count <= 0 {
			errs = append(errs, field.Invalid(p.Child("count"), count, "must be greater than zero"))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("allocationMode"), mode, []resourcev1.DeviceAllocationMode{resourcev1.DeviceAllocationModeAll, resourcev1.DeviceAllocationModeExactCount}))
	}
	return errs
}

func resourceClaimTemplates() *registry.Resource {
	return &registry.Resource{GroupVersion: resourcev1.SchemeGroupVersion, Name: "resourceclaimtemplates", SingularName: "resourceclaimtemplate",
		Kind: "ResourceClaimTemplate", Namespaced: true, HasSpec: true, NoGeneration: true,
		New: registry.Of[resourcev1.ResourceClaimTemplate](), NewList: registry.Of[resourcev1.ResourceClaimTemplateList](),
		Validate: func(o runtime.Object) field.ErrorList {
			t := o.(*resourcev1.ResourceClaimTemplate)
			p := field.NewPath("spec")
			errs := metav1validation.ValidateLabels(t.Spec.Labels, p.Child("metadata", "labels"))
			return append(errs, validateClaimSpec(&t.Spec.Spec, p.Child("spec"))...)
		},
		ValidateUpdate: func(o, old runtime.Object) field.ErrorList {
			if !apiequality.Semantic.DeepEqual(o.(*resourcev1.ResourceClaimTemplate).Spec, old.(*resourcev1.ResourceClaimTemplate).Spec) {
				return field.ErrorList{field.Invalid(field.NewPath("spec"), "<value omitted>", validate.FieldImmutableErrorMsg)}
			}
			return nil
		},
	}
}

func resourceSlices() *registry.Resource {
	return &registry.Resource{GroupVersion: resourcev1.SchemeGroupVersion, Name: "resourceslices", SingularName: "resourceslice", Kind: "ResourceSlice",
		HasSpec: true, New: registry.Of[resourcev1.ResourceSlice](), NewList: registry.Of[resourcev1.ResourceSliceList](),
		Validate: func(o runtime.Object) field.ErrorList {
			s := o.(*resourcev1.ResourceSlice).Spec
			p := field.NewPath("spec")
			errs := validate.Provisioner(s.Driver, p.Child("driver"))
			if s.Pool.Name == "" {
				errs = append(errs, field.Required(p.Child("pool", "name"), ""))
			}
			if s.Pool.ResourceSliceCount <= 0 {
				errs = append(errs, field.Invalid(p.Child("pool", "resourceSliceCount"), s.Pool.ResourceSliceCount, "must be greater than zero"))
			}
			n := validate.BoolInt(s.NodeName != nil) + validate.BoolInt(s.NodeSelector != nil) + validate.BoolInt(s.AllNodes != nil && *s.AllNodes) +
				validate.BoolInt(s.PerDeviceNodeSelection != nil && *s.PerDeviceNodeSelection)
			switch {
			case n == 0:
				errs = append(errs, field.Required(p, "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"))
			case n > 1:
				errs = append(errs, field.Invalid(p, "{`nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection`}",
					"exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set"))
			}
			for i, d := range s.Devices {
				dp := p.Child("devices").Index(i)
				errs = append(errs, validate.RequiredLabel(d.Name, dp.Child("name"))...)
			}
			return errs
		},
		FieldLabels: func(o runtime.Object) fields.Set {
			s := o.(*resourcev1.ResourceSlice).Spec
			node := ""
			if s.NodeName != nil {
				node = *s.NodeName
			}
			return fields.Set{"spec.nodeName": node, "spec.driver": s.Driver}
		},
		FieldLabelConversion: func(label, value string) (string, string, error) {
			switch label {
			case "metadata.name", "spec.nodeName", "spec.driver":
				return label, value, nil
			}
			return "", "", fmt.Errorf("field label not supported for %s: %s", resourcev1.SchemeGroupVersion.WithKind("ResourceSlice"), label)
		},
		Columns: []metav1.TableColumnDefinition{
			registry.Column("Node", "string", resourcev1.ResourceSliceSpec{}.SwaggerDoc()["nodeName"]),
			registry.Column("Driver", "string", resourcev1.ResourceSliceSpec{}.SwaggerDoc()["driver"]),
			registry.Column("Pool", "string", resourcev1.ResourcePool{}.SwaggerDoc()["name"]),
		},
		Cells: func(o runtime.Object) []any {
			s := o.(*resourcev1.ResourceSlice).Spec
			node := ""
			if s.NodeName != nil {
				node = *s.NodeName
			}
			return []any{node, s.Driver, s.Pool.Name}
		},
	}
}

func deviceTaintRules() *registry.Resource {
	return &registry.Resource{GroupVersion: resourcev1.SchemeGroupVersion, Name: "devicetaintrules", SingularName: "devicetaintrule",
		Kind: "DeviceTaintRule", Subresources: []string{"status"}, HasSpec: true, ResetStatusMeta: metav1.ResetObjectMetaForStatus,
		New: registry.Of[resourcev1.DeviceTaintRule](), NewList: registry.Of[resourcev1.DeviceTaintRuleList](),
		Convert: registry.StoredInVersion(resourcev1beta2.SchemeGroupVersion, registry.Of[resourcev1beta2.DeviceTaintRule](),
			registry.Of[resourcev1.DeviceTaintRule]()), // kube 1.37 stores v1beta2
		Validate: func(o runtime.Object) field.ErrorList {
			t := o.(*resourcev1.DeviceTaintRule).Spec.Taint
			p := field.NewPath("spec", "taint")
			var errs field.ErrorList
			if t.Key == "" {
				errs = append(errs, field.Required(p.Child("key"), ""))
			} else {
				errs = append(errs, validate.QualifiedName(t.Key, p.Child("key"))...)
			}
			switch t.Effect {
			case resourcev1.DeviceTaintEffectNoSchedule, resourcev1.DeviceTaintEffectNoExecute, resourcev1.DeviceTaintEffectNone:
			case "":
				errs = append(errs, field.Required(p.Child("effect"), ""))
			default:
				errs = append(errs, field.NotSupported(p.Child("effect"), t.Effect, []resourcev1.DeviceTaintEffect{
					resourcev1.DeviceTaintEffectNoExecute, resourcev1.DeviceTaintEffectNoSchedule, resourcev1.DeviceTaintEffectNone}))
			}
			return errs
		},
		Columns: []metav1.TableColumnDefinition{
			registry.Column("Key", "string", resourcev1.DeviceTaint{}.SwaggerDoc()["key"]),
			registry.Column("Value", "string", resourcev1.DeviceTaint{}.SwaggerDoc()["value"]),
			registry.Column("Effect", "string", resourcev1.DeviceTaint{}.SwaggerDoc()["effect"]),
			registry.Column("TimeAdded", "string", resourcev1.DeviceTaint{}.SwaggerDoc()["timeAdded"]),
		},
		Cells: func(o runtime.Object) []any {
			t := o.(*resourcev1.DeviceTaintRule).Spec.Taint
			added := "<unknown>"
			if t.TimeAdded != nil {
				added = duration.HumanDuration(time.Since(t.TimeAdded.Time))
			}
			return []any{t.Key, t.Value, string(t.Effect), added}
		},
	}
}
