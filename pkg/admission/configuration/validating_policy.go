package configuration

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/apichain/apichain/pkg/registry"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/utils/ptr"
)

// ValidatingAdmissionPolicies and ValidatingAdmissionPolicyBindings are kube's
// admissionregistration.k8s.io/v1 policy kinds, with kube's defaults and validation (CEL
// expressions compiled as kube compiles them). Core serves them; every backend that admits
// requests watches them.
func ValidatingAdmissionPolicies() *registry.Resource {
	return &registry.Resource{GroupVersion: admissionregistrationv1.SchemeGroupVersion,
		Name: "validatingadmissionpolicies", SingularName: "validatingadmissionpolicy", Kind: "ValidatingAdmissionPolicy",
		Categories: []string{"api-extensions"}, Subresources: []string{"status"}, HasSpec: true, ResetStatusMeta: metav1.ResetObjectMetaForStatus,
		New:     func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicy{} },
		NewList: func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicyList{} },
		Default: func(o runtime.Object) { defaultPolicy(o.(*admissionregistrationv1.ValidatingAdmissionPolicy)) },
		Validate: func(o runtime.Object) field.ErrorList {
			return validatePolicy(o.(*admissionregistrationv1.ValidatingAdmissionPolicy), nil)
		},
		ValidateUpdate: func(o, old runtime.Object) field.ErrorList {
			return validatePolicy(o.(*admissionregistrationv1.ValidatingAdmissionPolicy), old.(*admissionregistrationv1.ValidatingAdmissionPolicy))
		},
		Columns: []metav1.TableColumnDefinition{
			{Name: "Validations", Type: "integer", Description: "Validations indicates the number of validation rules defined in this configuration"},
			{Name: "ParamKind", Type: "string", Description: "ParamKind specifies the kind of resources used to parameterize this policy"},
		},
		Cells: func(o runtime.Object) []any {
			p := o.(*admissionregistrationv1.ValidatingAdmissionPolicy)
			return []any{int64(len(p.Spec.Validations)), paramKindCell(p.Spec.ParamKind)}
		},
	}
}

// ValidatingAdmissionPolicyBindings: see ValidatingAdmissionPolicies.
func ValidatingAdmissionPolicyBindings() *registry.Resource {
	return &registry.Resource{GroupVersion: admissionregistrationv1.SchemeGroupVersion,
		Name: "validatingadmissionpolicybindings", SingularName: "validatingadmissionpolicybinding", Kind: "ValidatingAdmissionPolicyBinding",
		Categories: []string{"api-extensions"}, HasSpec: true,
		New:     func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{} },
		NewList: func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicyBindingList{} },
		Default: func(o runtime.Object) { defaultBinding(o.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding)) },
		Validate: func(o runtime.Object) field.ErrorList {
			return validateBinding(o.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding))
		},
		Columns: []metav1.TableColumnDefinition{
			{Name: "PolicyName", Type: "string", Description: "PolicyName references a ValidatingAdmissionPolicy name which the ValidatingAdmissionPolicyBinding binds to"},
			{Name: "ParamRef", Type: "string", Description: "ParamRef specifies the parameter resource used to configure the admission control policy"},
		},
		Cells: func(o runtime.Object) []any {
			b := o.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding)
			return []any{b.Spec.PolicyName, paramRefCell(b.Spec.ParamRef)}
		},
	}
}

func defaultMatchResources(m *admissionregistrationv1.MatchResources) {
	if m == nil {
		return
	}
	if m.MatchPolicy == nil {
		m.MatchPolicy = ptr.To(admissionregistrationv1.Equivalent)
	}
	if m.NamespaceSelector == nil {
		m.NamespaceSelector = &metav1.LabelSelector{}
	}
	if m.ObjectSelector == nil {
		m.ObjectSelector = &metav1.LabelSelector{}
	}
	for _, rules := range [][]admissionregistrationv1.NamedRuleWithOperations{m.ResourceRules, m.ExcludeResourceRules} {
		for i := range rules {
			if rules[i].Scope == nil {
				rules[i].Scope = ptr.To(admissionregistrationv1.AllScopes)
			}
		}
	}
}

func defaultPolicy(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
	if p.Spec.FailurePolicy == nil {
		p.Spec.FailurePolicy = ptr.To(admissionregistrationv1.Fail)
	}
	defaultMatchResources(p.Spec.MatchConstraints)
}

func defaultBinding(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	defaultMatchResources(b.Spec.MatchResources)
}

// --- validation, as kube's (same rules and messages)

var (
	validationActions = sets.New("Deny", "Warn", "Audit")
	policyReasons     = sets.New(string(metav1.StatusReasonForbidden), string(metav1.StatusReasonInvalid), string(metav1.StatusReasonRequestEntityTooLarge))
	newlines          = regexp.MustCompile(`[\n\r]+`)
	policyCompiler    = func() plugincel.Compiler {
		c, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
		if err != nil {
			panic(err) // the base environment is built in
		}
		return c
	}
)

const (
	maxAuditAnnotations              = 20
	maxAuditAnnotationValueExprBytes = 5 * 1024
)

// storedExpressions are the expressions of the stored object an update keeps: they compile
// in the stored-expressions environment (kube's ratchet for CEL library changes).
type storedExpressions struct{ validations, messages, audit, match sets.Set[string] }

func storedOf(old *admissionregistrationv1.ValidatingAdmissionPolicy) storedExpressions {
	s := storedExpressions{sets.New[string](), sets.New[string](), sets.New[string](), sets.New[string]()}
	if old == nil {
		return s
	}
	for _, v := range old.Spec.Validations {
		s.validations.Insert(v.Expression)
		if v.MessageExpression != "" {
			s.messages.Insert(v.MessageExpression)
		}
	}
	for _, a := range old.Spec.AuditAnnotations {
		s.audit.Insert(a.ValueExpression)
	}
	for _, mc := range old.Spec.MatchConditions {
		s.match.Insert(mc.Expression)
	}
	return s
}

func envFor(stored sets.Set[string], expr string) environment.Type {
	if stored.Has(expr) {
		return environment.StoredExpressions
	}
	return environment.NewExpressions
}

func validatePolicy(p, old *admissionregistrationv1.ValidatingAdmissionPolicy) field.ErrorList {
	spec, fp := p.Spec, field.NewPath("spec")
	stored := storedOf(old)
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
	}
	sameConditions := old != nil && fmt.Sprint(old.Spec.ParamKind) == fmt.Sprint(spec.ParamKind) && fmt.Sprint(old.Spec.MatchConditions) == fmt.Sprint(spec.MatchConditions)
	if !sameConditions {
		errs = append(errs, validateMatchConditions(spec.MatchConditions, hasParams, stored.match, fp.Child("matchConditions"))...)
	}
	compiler := policyCompiler()
	vars := plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true}
	errs = append(errs, validateVariables(compiler, spec.Variables, vars, stored.validations, fp.Child("variables"))...)
	if len(spec.Validations) == 0 && len(spec.AuditAnnotations) == 0 {
		errs = append(errs, field.Required(fp.Child("validations"), "validations or auditAnnotations must contain at least one item"),
			field.Required(fp.Child("auditAnnotations"), "validations or auditAnnotations must contain at least one item"))
		return errs
	}
	for i, v := range spec.Validations {
		q := fp.Child("validations").Index(i)
		if strings.TrimSpace(v.Expression) == "" {
			errs = append(errs, field.Required(q.Child("expression"), "expression is not specified"))
		} else if res := compiler.CompileCELExpression(&validating.ValidationCondition{Expression: v.Expression}, vars, envFor(stored.validations, v.Expression)); res.Error != nil {
			errs = append(errs, celError(q.Child("expression"), v.Expression, res.Error))
		}
		if len(v.MessageExpression) > 0 && strings.TrimSpace(v.MessageExpression) == "" {
			errs = append(errs, field.Invalid(q.Child("messageExpression"), v.MessageExpression, "must be non-empty if specified"))
		} else if strings.TrimSpace(v.MessageExpression) != "" {
			if res := compiler.CompileCELExpression(&validating.MessageExpressionCondition{MessageExpression: v.MessageExpression},
				plugincel.OptionalVariableDeclarations{HasParams: hasParams}, envFor(stored.messages, v.MessageExpression)); res.Error != nil {
				errs = append(errs, celError(q.Child("messageExpression"), v.MessageExpression, res.Error))
			}
		}
		msg := strings.TrimSpace(v.Message)
		if len(v.Message) > 0 && msg == "" {
			errs = append(errs, field.Invalid(q.Child("message"), v.Message, "message must be non-empty if specified"))
		} else if newlines.MatchString(msg) {
			errs = append(errs, field.Invalid(q.Child("message"), v.Message, "message must not contain line breaks"))
		}
		if v.Reason != nil && !policyReasons.Has(string(*v.Reason)) {
			errs = append(errs, field.NotSupported(q.Child("reason"), *v.Reason, sets.List(policyReasons)))
		}
	}
	if spec.AuditAnnotations != nil {
		if len(spec.AuditAnnotations) > maxAuditAnnotations {
			errs = append(errs, field.Invalid(fp.Child("auditAnnotations"), spec.AuditAnnotations, fmt.Sprintf("must not have more than %d auditAnnotations", maxAuditAnnotations)))
		}
		keys := sets.New[string]()
		for i, a := range spec.AuditAnnotations {
			q := fp.Child("auditAnnotations").Index(i)
			if p.Name != "" {
				for _, msg := range validation.IsQualifiedName(p.Name + "/" + a.Key) {
					errs = append(errs, field.Invalid(q.Child("key"), p.Name+"/"+a.Key, msg))
				}
			} else {
				errs = append(errs, field.Invalid(q.Child("key"), a.Key, "requires metadata.name be non-empty"))
			}
			expr := strings.TrimSpace(a.ValueExpression)
			switch {
			case expr == "":
				errs = append(errs, field.Required(q.Child("valueExpression"), "valueExpression is not specified"))
			case len(expr) > maxAuditAnnotationValueExprBytes:
				errs = append(errs, field.Required(q.Child("valueExpression"), fmt.Sprintf("must not exceed %d bytes in length", maxAuditAnnotationValueExprBytes)))
			default:
				if res := compiler.CompileCELExpression(&validating.AuditAnnotationCondition{ValueExpression: expr}, vars, envFor(stored.audit, a.ValueExpression)); res.Error != nil {
					errs = append(errs, celError(q.Child("valueExpression"), a.ValueExpression, res.Error))
				}
			}
			if keys.Has(a.Key) {
				errs = append(errs, field.Duplicate(q.Child("key"), a.Key))
			}
			keys.Insert(a.Key)
		}
	}
	return errs
}

// validateVariables compiles a policy's variables in order (each may use the ones before).
func validateVariables(compiler plugincel.Compiler, variables []admissionregistrationv1.Variable, vars plugincel.OptionalVariableDeclarations,
	stored sets.Set[string], p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, v := range variables {
		q := p.Index(i)
		if strings.TrimSpace(v.Name) == "" {
			errs = append(errs, field.Required(q.Child("name"), "name is not specified"))
		} else if !isCELIdentifier(v.Name) {
			errs = append(errs, field.Invalid(q.Child("name"), v.Name, "name is not a valid CEL identifier"))
		}
		if strings.TrimSpace(v.Expression) == "" {
			errs = append(errs, field.Required(q.Child("expression"), "expression is not specified"))
		} else if res := compiler.(*plugincel.CompositedCompiler).CompileAndStoreVariable(&validating.Variable{Name: v.Name, Expression: v.Expression}, vars,
			envFor(stored, v.Expression)); res.Error != nil {
			errs = append(errs, celError(q.Child("expression"), v.Expression, res.Error))
		}
	}
	return errs
}

// validateMatchConditions is kube's validation of a webhook's or policy's matchConditions.
func validateMatchConditions(mcs []admissionregistrationv1.MatchCondition, hasParams bool, stored sets.Set[string], p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(mcs) > maxMatchConditions {
		errs = append(errs, field.TooMany(p, len(mcs), maxMatchConditions))
	}
	names := sets.New[string]()
	for i, mc := range mcs {
		q := p.Index(i)
		if expr := strings.TrimSpace(mc.Expression); expr == "" {
			errs = append(errs, field.Required(q.Child("expression"), ""))
		} else if res := statelessCompiler().CompileCELExpression(&matchconditions.MatchCondition{Expression: expr},
			plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true}, envFor(stored, expr)); res.Error != nil {
			errs = append(errs, celError(q.Child("expression"), expr, res.Error))
		}
		if mc.Name == "" {
			errs = append(errs, field.Required(q.Child("name"), ""))
		} else {
			for _, msg := range validation.IsQualifiedName(mc.Name) {
				errs = append(errs, field.Invalid(q.Child("name"), mc.Name, msg))
			}
			if names.Has(mc.Name) {
				errs = append(errs, field.Duplicate(q.Child("name"), mc.Name))
			}
			names.Insert(mc.Name)
		}
	}
	return errs
}

func validateParamKind(k admissionregistrationv1.ParamKind, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if k.APIVersion == "" {
		errs = append(errs, field.Required(p.Child("apiVersion"), ""))
	} else {
		group, version, err := parseGroupVersion(k.APIVersion)
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(p.Child("apiVersion"), k.APIVersion, err.Error()))
		default:
			if group != "" {
				if e := validation.IsDNS1123Subdomain(group); len(e) > 0 {
					errs = append(errs, field.Invalid(p.Child("apiVersion"), group, strings.Join(e, ",")))
				}
			}
			if version == "" {
				errs = append(errs, field.Invalid(p.Child("apiVersion"), k.APIVersion, "version must be specified"))
			} else if e := validation.IsDNS1035Label(version); len(e) > 0 {
				errs = append(errs, field.Invalid(p.Child("apiVersion"), version, strings.Join(e, ",")))
			}
		}
	}
	if k.Kind == "" {
		errs = append(errs, field.Required(p.Child("kind"), ""))
	} else if e := validation.IsDNS1035Label(strings.ToLower(k.Kind)); len(e) > 0 {
		errs = append(errs, field.Invalid(p.Child("kind"), k.Kind, "may have mixed case, but should otherwise match: "+strings.Join(e, ",")))
	}
	return errs
}

func parseGroupVersion(gv string) (group, version string, err error) {
	if gv == "" || gv == "/" {
		return "", "", nil
	}
	switch strings.Count(gv, "/") {
	case 0:
		return "", gv, nil
	case 1:
		g, v, _ := strings.Cut(gv, "/")
		return g, v, nil
	default:
		return "", "", fmt.Errorf("unexpected GroupVersion string: %v", gv)
	}
}

func validateMatchResources(m *admissionregistrationv1.MatchResources, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if m == nil {
		return nil
	}
	if m.MatchPolicy == nil {
		errs = append(errs, field.Required(p.Child("matchPolicy"), ""))
	} else if !matchPolicies.Has(string(*m.MatchPolicy)) {
		errs = append(errs, field.NotSupported(p.Child("matchPolicy"), *m.MatchPolicy, sets.List(matchPolicies)))
	}
	for _, s := range []struct {
		name string
		sel  *metav1.LabelSelector
	}{{"namespaceSelector", m.NamespaceSelector}, {"objectSelector", m.ObjectSelector}} {
		if s.sel == nil {
			errs = append(errs, field.Required(p.Child(s.name), ""))
		} else {
			errs = append(errs, metav1validation.ValidateLabelSelector(s.sel, metav1validation.LabelSelectorValidationOptions{}, p.Child(s.name))...)
		}
	}
	for _, rs := range []struct {
		name  string
		rules []admissionregistrationv1.NamedRuleWithOperations
	}{{"resourceRules", m.ResourceRules}, {"excludeResourceRules", m.ExcludeResourceRules}} {
		for i, r := range rs.rules {
			q := p.Child(rs.name).Index(i)
			names := sets.New[string]()
			for j, n := range r.ResourceNames {
				for _, msg := range path.ValidatePathSegmentName(n, false) {
					errs = append(errs, field.Invalid(q.Child("resourceNames").Index(j), n, msg))
				}
				if names.Has(n) {
					errs = append(errs, field.Duplicate(q.Child("resourceNames").Index(j), n))
				}
				names.Insert(n)
			}
			errs = append(errs, validateRuleWithOperations(r.RuleWithOperations, q)...)
		}
	}
	return errs
}

func validateBinding(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) field.ErrorList {
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
	actions := sets.New[string]()
	q := fp.Child("validationActions")
	for i, a := range spec.ValidationActions {
		if !validationActions.Has(string(a)) {
			errs = append(errs, field.NotSupported(q.Index(i), a, sets.List(validationActions)))
		}
		if actions.Has(string(a)) {
			errs = append(errs, field.Duplicate(q.Index(i), a))
		}
		actions.Insert(string(a))
	}
	if actions.Has("Deny") && actions.Has("Warn") {
		errs = append(errs, field.Invalid(q, spec.ValidationActions, "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"))
	}
	if len(actions) == 0 {
		errs = append(errs, field.Required(q, "at least one validation action is required"))
	}
	return errs
}

// validateParamRef is kube's validation of a binding's paramRef.
func validateParamRef(r *admissionregistrationv1.ParamRef, q *field.Path) field.ErrorList {
	if r == nil {
		return nil
	}
	var errs field.ErrorList
	if r.Name != "" {
		for _, msg := range path.ValidatePathSegmentName(r.Name, false) {
			errs = append(errs, field.Invalid(q.Child("name"), r.Name, msg))
		}
		if r.Selector != nil {
			errs = append(errs, field.Forbidden(q.Child("name"), `name and selector are mutually exclusive`))
		}
	}
	if r.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(r.Selector, metav1validation.LabelSelectorValidationOptions{}, q.Child("selector"))...)
		if r.Name != "" {
			errs = append(errs, field.Forbidden(q.Child("selector"), `name and selector are mutually exclusive`))
		}
	}
	if r.Name == "" && r.Selector == nil {
		errs = append(errs, field.Required(q, `one of name or selector must be specified`))
	}
	if r.ParameterNotFoundAction == nil || *r.ParameterNotFoundAction == "" {
		errs = append(errs, field.Required(q.Child("parameterNotFoundAction"), ""))
	} else if a := *r.ParameterNotFoundAction; a != admissionregistrationv1.DenyAction && a != admissionregistrationv1.AllowAction {
		errs = append(errs, field.NotSupported(q.Child("parameterNotFoundAction"), r.ParameterNotFoundAction, []string{"Deny", "Allow"}))
	}
	return errs
}

func isCELIdentifier(name string) bool {
	return regexp.MustCompile(`^[_a-zA-Z][_a-zA-Z0-9]*$`).MatchString(name) && !celIdentifierReserv.Has(name)
}
