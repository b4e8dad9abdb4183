package configuration

import (
	"fmt"
	"strings"

	"github.com/apichain/apichain/pkg/registry"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/utils/ptr"
)

// MutatingAdmissionPolicies and MutatingAdmissionPolicyBindings are kube 1.37's
// admissionregistration.k8s.io/v1 mutating policy kinds, with kube's defaults, validation
// (mutations compiled as kube compiles them) and columns. Core serves them; every backend
// that admits requests watches them.
func MutatingAdmissionPolicies() *registry.Resource {
	return &registry.Resource{GroupVersion: admissionregistrationv1.SchemeGroupVersion,
		Name: "mutatingadmissionpolicies", SingularName: "mutatingadmissionpolicy", Kind: "MutatingAdmissionPolicy",
		Categories: []string{"api-extensions"}, HasSpec: true,
		New:     func() runtime.Object { return &admissionregistrationv1.MutatingAdmissionPolicy{} },
		NewList: func() runtime.Object { return &admissionregistrationv1.MutatingAdmissionPolicyList{} },
		Default: func(o runtime.Object) { defaultMutatingPolicy(o.(*admissionregistrationv1.MutatingAdmissionPolicy)) },
		Validate: func(o runtime.Object) field.ErrorList {
			return validateMutatingPolicy(o.(*admissionregistrationv1.MutatingAdmissionPolicy), nil)
		},
		ValidateUpdate: func(o, old runtime.Object) field.ErrorList {
			return validateMutatingPolicy(o.(*admissionregistrationv1.MutatingAdmissionPolicy), old.(*admissionregistrationv1.MutatingAdmissionPolicy))
		},
		Columns: []metav1.TableColumnDefinition{
			{Name: "Mutations", Type: "integer", Description: "Mutation indicates the number of mutations rules defined in this configuration"},
			{Name: "ParamKind", Type: "string", Description: "ParamKind specifies the kind of resources used to parameterize this policy"},
		},
		Cells: func(o runtime.Object) []any {
			p := o.(*admissionregistrationv1.MutatingAdmissionPolicy)
			return []any{int64(len(p.Spec.Mutations)), paramKindCell(p.Spec.ParamKind)}
		},
	}
}

// MutatingAdmissionPolicyBindings: see MutatingAdmissionPolicies.
func MutatingAdmissionPolicyBindings() *registry.Resource {
	return &registry.Resource{GroupVersion: admissionregistrationv1.SchemeGroupVersion,
		Name: "mutatingadmissionpolicybindings", SingularName: "mutatingadmissionpolicybinding", Kind: "MutatingAdmissionPolicyBinding",
		Categories: []string{"api-extensions"}, HasSpec: true,
		New:     func() runtime.Object { return &admissionregistrationv1.MutatingAdmissionPolicyBinding{} },
		NewList: func() runtime.Object { return &admissionregistrationv1.MutatingAdmissionPolicyBindingList{} },
		Default: func(o runtime.Object) {
			defaultMatchResources(o.(*admissionregistrationv1.MutatingAdmissionPolicyBinding).Spec.MatchResources)
		},
		Validate: func(o runtime.Object) field.ErrorList {
			return validateMutatingBinding(o.(*admissionregistrationv1.MutatingAdmissionPolicyBinding))
		},
		Columns: []metav1.TableColumnDefinition{
			{Name: "PolicyName", Type: "string", Description: "PolicyName indicates the policy definition which the policy binding binded to"},
			{Name: "ParamRef", Type: "string", Description: "ParamRef indicates the param resource which sets the configuration param"},
		},
		Cells: func(o runtime.Object) []any {
			b := o.(*admissionregistrationv1.MutatingAdmissionPolicyBinding)
			return []any{b.Spec.PolicyName, paramRefCell(b.Spec.ParamRef)}
		},
	}
}

func paramKindCell(k *admissionregistrationv1.ParamKind) string {
	if k == nil {
		return "<unset>"
	}
	return k.APIVersion + "/" + k.Kind
}

func paramRefCell(r *admissionregistrationv1.ParamRef) string {
	switch {
	case r == nil:
		return "<unset>"
	case r.Name != "" && r.Namespace != "":
		return r.Namespace + "/" + r.Name
	case r.Name != "": // kube cannot tell a cluster-scoped param here either
		return "*/" + r.Name
	case r.Selector != nil:
		return r.Selector.String()
	}
	return "<unset>"
}

func defaultMutatingPolicy(p *admissionregistrationv1.MutatingAdmissionPolicy) {
	if p.Spec.FailurePolicy == nil {
		p.Spec.FailurePolicy = ptr.To(admissionregistrationv1.Fail)
	}
	defaultMatchResources(p.Spec.MatchConstraints)
}

var (
	mutatingOperations = sets.New(string(admissionregistrationv1.OperationAll), string(admissionregistrationv1.Create),
		string(admissionregistrationv1.Update), string(admissionregistrationv1.Connect))
	reinvocationPolicies  = sets.New(string(admissionregistrationv1.NeverReinvocationPolicy), string(admissionregistrationv1.IfNeededReinvocationPolicy))
	mutationPatchTypes    = sets.New(string(admissionregistrationv1.PatchTypeApplyConfiguration), string(admissionregistrationv1.PatchTypeJSONPatch))
	mutatingOperationList = sets.List(mutatingOperations)
)

// validateMutatingPolicy is kube's validation of a MutatingAdmissionPolicy (old: the stored
// one on update, whose expressions compile in the stored-expressions environment).
func validateMutatingPolicy(p, old *admissionregistrationv1.MutatingAdmissionPolicy) field.ErrorList {
	spec, fp := p.Spec, field.NewPath("spec")
	stored := sets.New[string]()
	storedMatch := sets.New[string]()
	if old != nil {
		for _, m := range old.Spec.Mutations {
			if m.ApplyConfiguration != nil {
				stored.Insert(m.ApplyConfiguration.Expression)
			}
			if m.JSONPatch != nil {
				stored.Insert(m.JSONPatch.Expression)
			}
		}
		for _, v := range old.Spec.Variables {
			stored.Insert(v.Expression)
		}
		for _, mc := range old.Spec.MatchConditions {
			storedMatch.Insert(mc.Expression)
		}
	}
	var errs field.ErrorList
	if spec.FailurePolicy == nil {
		errs = append(errs, field.Required(fp.Child("failurePolicy"), ""))
	} else if !failurePolicies.Has(string(*spec.FailurePolicy)) {
		errs = append(errs, field.NotSupported(fp.Child("failurePolicy"), *spec.FailurePolicy, sets.List(failurePolicies)))
	}
	hasParams := spec.ParamKind != nil
	if hasParams {
		errs = append(errs, validateParamKind(*spec.ParamKind, fp.Child("paramKind"))...)
	}
	if spec.MatchConstraints == nil {
		errs = append(errs, field.Required(fp.Child("matchConstraints"), ""))
	} else {
		errs = append(errs, validateMatchResources(spec.MatchConstraints, fp.Child("matchConstraints"))...)
		if len(spec.MatchConstraints.ResourceRules) == 0 {
			errs = append(errs, field.Required(fp.Child("matchConstraints", "resourceRules"), ""))
		}
		errs = append(errs, mutatingOperationErrors(spec.MatchConstraints, fp.Child("matchConstraints", "resourceRules", "operations"))...)
	}
	sameConditions := old != nil && fmt.Sprint(old.Spec.ParamKind) == fmt.Sprint(spec.ParamKind) && fmt.Sprint(old.Spec.MatchConditions) == fmt.Sprint(spec.MatchConditions)
	if !sameConditions {
		errs = append(errs, validateMatchConditions(spec.MatchConditions, hasParams, storedMatch, fp.Child("matchConditions"))...)
	}
	compiler := policyCompiler()
	vars := plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true}
	errs = append(errs, validateVariables(compiler, spec.Variables, vars, stored, fp.Child("variables"))...)
	if len(spec.Mutations) == 0 {
		errs = append(errs, field.Required(fp.Child("mutations"), "mutations must contain at least one item"))
	}
	patchVars := vars
	patchVars.HasPatchTypes = true
	for i, m := range spec.Mutations {
		q := fp.Child("mutations").Index(i)
		compile := func(child string, accessor plugincel.ExpressionAccessor, expr string) {
			if strings.TrimSpace(expr) == "" {
				errs = append(errs, field.Required(q.Child(child, "expression"), ""))
			} else if res := compiler.CompileCELExpression(accessor, patchVars, envFor(stored, expr)); res.Error != nil {
				errs = append(errs, celError(q.Child(child, "expression"), strings.TrimSpace(expr), res.Error))
			}
		}
		switch m.PatchType {
		case "":
			errs = append(errs, field.Required(q.Child("patchType"), ""))
		case admissionregistrationv1.PatchTypeJSONPatch:
			if m.JSONPatch == nil {
				errs = append(errs, field.Required(q.Child("jsonPatch"), "must be specified when patchType is JSONPatch"))
			} else {
				compile("jsonPatch", &patch.JSONPatchCondition{Expression: strings.TrimSpace(m.JSONPatch.Expression)}, m.JSONPatch.Expression)
			}
			if m.ApplyConfiguration != nil {
				errs = append(errs, field.Invalid(q.Child("applyConfiguration"), "{applyConfiguration}", "must not be specified when patchType is JSONPatch"))
			}
		case admissionregistrationv1.PatchTypeApplyConfiguration:
			if m.ApplyConfiguration == nil {
				errs = append(errs, field.Required(q.Child("applyConfiguration"), "must be specified when patchType is ApplyConfiguration"))
			} else {
				compile("applyConfiguration", &patch.ApplyConfigurationCondition{Expression: strings.TrimSpace(m.ApplyConfiguration.Expression)}, m.ApplyConfiguration.Expression)
			}
			if m.JSONPatch != nil {
				errs = append(errs, field.Invalid(q.Child("jsonPatch"), "{jsonPatch}", "must not be specified when patchType is ApplyConfiguration"))
			}
		default:
			errs = append(errs, field.NotSupported(q.Child("patchType"), m.PatchType, sets.List(mutationPatchTypes)))
		}
	}
	if spec.ReinvocationPolicy == "" {
		errs = append(errs, field.Required(fp.Child("reinvocationPolicy"), ""))
	} else if !reinvocationPolicies.Has(string(spec.ReinvocationPolicy)) {
		errs = append(errs, field.NotSupported(fp.Child("reinvocationPolicy"), spec.ReinvocationPolicy, sets.List(reinvocationPolicies)))
	}
	return errs
}

// mutatingOperationErrors: deletes cannot be mutated.
func mutatingOperationErrors(m *admissionregistrationv1.MatchResources, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, r := range m.ResourceRules {
		for _, op := range r.Operations {
			if !mutatingOperations.Has(string(op)) {
				errs = append(errs, field.NotSupported(p, op, mutatingOperationList))
			}
		}
	}
	return errs
}

func validateMutatingBinding(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) field.ErrorList {
	spec, fp := b.Spec, field.NewPath("spec")
	var errs field.ErrorList
	if spec.PolicyName == "" {
		errs = append(errs, field.Required(fp.Child("policyName"), ""))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(spec.PolicyName) {
			errs = append(errs, field.Invalid(fp.Child("policyName"), spec.PolicyName, msg))
		}
	}
	errs = append(errs, validateParamRef(spec.ParamRef, fp.Child("paramRef"))...)
	errs = append(errs, validateMatchResources(spec.MatchResources, fp.Child("matchResources"))...)
	if spec.MatchResources != nil {
		errs = append(errs, mutatingOperationErrors(spec.MatchResources, fp.Child("matchResources", "resourceRules", "operations"))...)
	}
	return errs
}
