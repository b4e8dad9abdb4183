package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/apichain/apichain/pkg/admission/match"
	"github.com/apichain/apichain/pkg/registry"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/object"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/rules"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// Policies is kube's ValidatingAdmissionPolicy admission: each policy compiled with kube's CEL
// libraries when it changes, matched to each write with its bindings, evaluated per binding
// and param, and its failures acted on as the bindings say (Deny, Warn, Audit).
type Policies struct {
	hooks      atomic.Pointer[[]*policyHook]
	namespaces match.NamespaceGetter
	params     []*registry.Client // where param objects are read, first that serves the paramKind
	log        *slog.Logger
}

type policyHook = boundPolicy[*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding, validating.Validator]

// NewPolicies returns policy admission with no policies yet; params are read through the
// given clients.
func NewPolicies(namespaces match.NamespaceGetter, log *slog.Logger, params ...*registry.Client) *Policies {
	p := &Policies{namespaces: namespaces, params: params, log: log}
	p.hooks.Store(&[]*policyHook{})
	return p
}

// SetPolicies compiles the policies and pairs them with their bindings.
func (p *Policies) SetPolicies(policies []*admissionregistrationv1.ValidatingAdmissionPolicy, bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	hooks := bindPolicies(policies, bindings, func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) string { return b.Spec.PolicyName },
		*p.hooks.Load(), compilePolicy)
	p.hooks.Store(&hooks)
}

// compilePolicy compiles a policy's variables, match conditions, validations, audit
// annotations and messages as kube does; a compilation error is the validator's (per the
// failurePolicy at evaluation).
func compilePolicy(pol *admissionregistrationv1.ValidatingAdmissionPolicy) validating.Validator {
	hasParams := pol.Spec.ParamKind != nil
	vars := plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true}
	messageVars := plugincel.OptionalVariableDeclarations{HasParams: hasParams}
	fp := pol.Spec.FailurePolicy
	c, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		return validating.NewValidator(nil, nil, nil, nil, fp, err)
	}
	variables := make([]plugincel.NamedExpressionAccessor, len(pol.Spec.Variables))
	for i, v := range pol.Spec.Variables {
		variables[i] = &validating.Variable{Name: v.Name, Expression: v.Expression}
	}
	c.CompileAndStoreVariables(variables, vars, environment.StoredExpressions)
	var matcher matchconditions.Matcher
	if mcs := pol.Spec.MatchConditions; len(mcs) > 0 {
		exprs := make([]plugincel.ExpressionAccessor, len(mcs))
		for i := range mcs {
			exprs[i] = (*matchconditions.MatchCondition)(&mcs[i])
		}
		matcher = matchconditions.NewMatcher(c.CompileCondition(exprs, vars, environment.StoredExpressions), fp, "policy", "validate", pol.Name)
	}
	validations := make([]plugincel.ExpressionAccessor, len(pol.Spec.Validations))
	messages := make([]plugincel.ExpressionAccessor, len(pol.Spec.Validations))
	for i, v := range pol.Spec.Validations {
		validations[i] = &validating.ValidationCondition{Expression: v.Expression, Message: v.Message, Reason: v.Reason}
		if v.MessageExpression != "" {
			messages[i] = &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression}
		}
	}
	audit := make([]plugincel.ExpressionAccessor, len(pol.Spec.AuditAnnotations))
	for i, a := range pol.Spec.AuditAnnotations {
		audit[i] = &validating.AuditAnnotationCondition{Key: a.Key, ValueExpression: a.ValueExpression}
	}
	return validating.NewValidator(c.CompileCondition(validations, vars, environment.StoredExpressions), matcher,
		c.CompileCondition(audit, vars, environment.StoredExpressions), c.CompileCondition(messages, messageVars, environment.StoredExpressions), fp, nil)
}

// denial is a failed validation that denies the request.
type denial struct {
	policy, binding string
	message         string
	reason          metav1.StatusReason
}

// Validate evaluates the policies that match a against each of their matching bindings.
func (p *Policies) Validate(ctx context.Context, a admission.Attributes) error {
	hooks := *p.hooks.Load()
	if len(hooks) == 0 || match.Exempt(a) {
		return nil
	}
	va := match.Versioned(a)
	var denied []denial
	var failures []validating.ValidationFailureValue
	configError := func(err error, pol *admissionregistrationv1.ValidatingAdmissionPolicy, binding *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
		if pol.Spec.FailurePolicy != nil && *pol.Spec.FailurePolicy == admissionregistrationv1.Ignore {
			return
		}
		d := denial{policy: pol.Name, message: fmt.Errorf("failed to configure policy: %w", err).Error()}
		if binding != nil {
			d.binding, d.message = binding.Name, fmt.Errorf("failed to configure binding: %w", err).Error()
		}
		denied = append(denied, d)
	}
	for _, h := range hooks {
		pol := h.policy
		if pol.Spec.MatchConstraints == nil {
			configError(errors.New("policy contained no match constraints, a required field"), pol, nil)
			continue
		}
		ok, matchedResource, err := p.matches(ctx, a, pol.Spec.MatchConstraints)
		if err != nil {
			configError(err, pol, nil)
			continue
		}
		if !ok {
			continue
		}
		annotations := map[string][]string{}
		for _, b := range h.bindings {
			if m := b.Spec.MatchResources; m != nil {
				ok, _, err := p.matches(ctx, a, m)
				if err != nil {
					configError(err, pol, b)
					continue
				}
				if !ok {
					continue
				}
			}
			params, err := p.collectParams(ctx, pol.Spec.ParamKind, b.Spec.ParamRef, a.GetNamespace())
			if err != nil {
				configError(err, pol, b)
				continue
			}
			var ns *corev1.Namespace
			if name := a.GetNamespace(); name != "" && a.GetKind() != corev1.SchemeGroupVersion.WithKind("Namespace") {
				if ns, err = p.namespaces(ctx, name); err != nil {
					return err
				}
			}
			for _, param := range params {
				res := h.compiled.Validate(ctx, matchedResource, va, param, ns, celconfig.RuntimeCELCostBudget, nil)
				for i, d := range res.Decisions {
					if d.Action != validating.ActionDeny {
						continue
					}
					for _, action := range b.Spec.ValidationActions {
						switch action {
						case admissionregistrationv1.Deny:
							denied = append(denied, denial{policy: pol.Name, binding: b.Name, message: d.Message, reason: d.Reason})
						case admissionregistrationv1.Warn:
							registry.AddWarnings(ctx, fmt.Sprintf("Validation failed for ValidatingAdmissionPolicy '%s' with binding '%s': %s", pol.Name, b.Name, d.Message))
						case admissionregistrationv1.Audit:
							failures = append(failures, validating.ValidationFailureValue{ExpressionIndex: i, Message: d.Message,
								ValidationActions: b.Spec.ValidationActions, Binding: b.Name, Policy: b.Spec.PolicyName})
						}
					}
				}
				for _, an := range res.AuditAnnotations {
					switch an.Action {
					case validating.AuditAnnotationActionPublish:
						v := an.Value
						if len(v) > 10*1024 {
							v = v[:10*1024]
						}
						if !contains(annotations[an.Key], v) {
							annotations[an.Key] = append(annotations[an.Key], v)
						}
					case validating.AuditAnnotationActionError: // with failurePolicy Fail, an error denies
						denied = append(denied, denial{policy: pol.Name, binding: b.Name, message: an.Error})
					}
				}
			}
		}
		for k, vs := range annotations {
			_ = a.AddAnnotation(pol.Name+"/"+k, strings.Join(vs, ", "))
		}
	}
	if len(failures) > 0 {
		if len(failures) > 50 {
			failures = failures[:50]
		}
		if v, err := json.Marshal(failures); err == nil {
			_ = a.AddAnnotation("validation.policy.admission.k8s.io/validation_failure", string(v))
		}
	}
	if len(denied) == 0 {
		return nil
	}
	d := denied[0]
	message := fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request: %s", d.policy, d.binding, d.message)
	if d.binding == "" {
		message = fmt.Sprintf("ValidatingAdmissionPolicy '%s' denied request: %s", d.policy, d.message)
	}
	var status *apierrors.StatusError
	if !errors.As(admission.NewForbidden(a, errors.New(message)), &status) {
		return apierrors.NewInternalError(errors.New(message))
	}
	reason := d.reason
	if reason == "" {
		reason = metav1.StatusReasonInvalid
	}
	status.ErrStatus.Reason, status.ErrStatus.Code = reason, reasonCode(reason)
	status.ErrStatus.Details.Causes = append(status.ErrStatus.Details.Causes, metav1.StatusCause{Message: message})
	return status
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func reasonCode(r metav1.StatusReason) int32 {
	switch r {
	case metav1.StatusReasonForbidden:
		return 403
	case metav1.StatusReasonUnauthorized:
		return 401
	case metav1.StatusReasonRequestEntityTooLarge:
		return 413
	default:
		return 422
	}
}

// matchCriteria adapts MatchResources to kube's selector predicates.
type matchCriteria struct {
	m *admissionregistrationv1.MatchResources
}

func (c matchCriteria) GetParsedNamespaceSelector() (labels.Selector, error) {
	return metav1.LabelSelectorAsSelector(c.m.NamespaceSelector)
}
func (c matchCriteria) GetParsedObjectSelector() (labels.Selector, error) {
	return metav1.LabelSelectorAsSelector(c.m.ObjectSelector)
}

// matches is kube's policy matching: selectors, then excluded rules, then resource rules
// with their resource names (resources served in one version: exact and equivalent agree).
func (p *Policies) matches(ctx context.Context, a admission.Attributes, m *admissionregistrationv1.MatchResources) (bool, schema.GroupVersionResource, error) {
	if m.NamespaceSelector == nil || m.ObjectSelector == nil {
		return false, schema.GroupVersionResource{}, errors.New("a nil namespace or object selector was passed, please ensure selectors are initialized properly")
	}
	c := matchCriteria{m}
	nsOK, nsErr := match.Namespace(ctx, p.namespaces, c, a)
	if !nsOK && nsErr == nil {
		return false, schema.GroupVersionResource{}, nil
	}
	objOK, objErr := (&object.Matcher{}).MatchObjectSelector(c, a)
	if !objOK && objErr == nil {
		return false, schema.GroupVersionResource{}, nil
	}
	if matchesNamedRules(m.ExcludeResourceRules, a) {
		return false, schema.GroupVersionResource{}, nil
	}
	if len(m.ResourceRules) > 0 && !matchesNamedRules(m.ResourceRules, a) {
		return false, schema.GroupVersionResource{}, nil
	}
	if nsErr != nil {
		return false, schema.GroupVersionResource{}, nsErr
	}
	if objErr != nil {
		return false, schema.GroupVersionResource{}, objErr
	}
	return true, a.GetResource(), nil
}

func matchesNamedRules(named []admissionregistrationv1.NamedRuleWithOperations, a admission.Attributes) bool {
	for _, r := range named {
		if !(&rules.Matcher{Rule: r.RuleWithOperations, Attr: a}).Matches() {
			continue
		}
		if len(r.ResourceNames) == 0 || contains(r.ResourceNames, a.GetName()) {
			return true
		}
	}
	return false
}

// collectParams finds the params of a binding, as kube's CollectParams: none without a
// paramKind or paramRef (evaluated once with null params), by name or by selector, in the
// request's namespace unless the paramRef names one.
func (p *Policies) collectParams(ctx context.Context, kind *admissionregistrationv1.ParamKind, ref *admissionregistrationv1.ParamRef, namespace string) ([]runtime.Object, error) {
	if kind == nil || ref == nil {
		return []runtime.Object{nil}, nil
	}
	gv, err := schema.ParseGroupVersion(kind.APIVersion)
	if err != nil {
		return nil, err
	}
	gvk := gv.WithKind(kind.Kind)
	var client *registry.Client
	var r *registry.Resource
	for _, c := range p.params {
		for _, res := range c.Resources() {
			if res.GroupVersion == gv && res.Kind == kind.Kind {
				client, r = c, res
			}
		}
		if r != nil {
			break
		}
	}
	if r == nil {
		return nil, fmt.Errorf("failed to find resource referenced by paramKind: '%v'", gvk)
	}
	ns := ""
	if r.Namespaced {
		ns = namespace
		if ref.Namespace != "" {
			ns = ref.Namespace
		} else if ns == "" {
			return nil, errors.New("cannot use namespaced paramRef in policy binding that matches cluster-scoped resources")
		}
	} else if ref.Namespace != "" {
		return nil, errors.New("paramRef.namespace must not be provided for a cluster-scoped `paramKind`")
	}
	var params []runtime.Object
	switch {
	case ref.Name != "":
		obj, err := client.Get(ctx, r, ns, ref.Name)
		switch {
		case err == nil:
			params = []runtime.Object{obj}
		case apierrors.IsNotFound(err):
		default:
			return nil, err
		}
	case ref.Selector != nil:
		sel, err := metav1.LabelSelectorAsSelector(ref.Selector)
		if err != nil {
			return nil, err
		}
		all, err := client.List(ctx, r, ns, "")
		if err != nil {
			return nil, err
		}
		for _, o := range all {
			if acc, err := meta.Accessor(o); err == nil && sel.Matches(labels.Set(acc.GetLabels())) {
				params = append(params, o)
			}
		}
	default:
		return nil, errors.New("one of name or selector must be provided")
	}
	if len(params) == 0 && ref.ParameterNotFoundAction != nil && *ref.ParameterNotFoundAction == admissionregistrationv1.DenyAction {
		return nil, errors.New("no params found for policy binding with `Deny` parameterNotFoundAction")
	}
	for i, o := range params { // CEL sees params with their apiVersion and kind
		o = o.DeepCopyObject()
		o.GetObjectKind().SetGroupVersionKind(gvk)
		params[i] = o
	}
	return params, nil
}
