package flowcontrol

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/apichain/apichain/pkg/registry"
	"github.com/apichain/apichain/services/core/builtin/defaulting"
	"github.com/apichain/apichain/services/core/builtin/validate"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	fcbootstrap "k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	"k8s.io/apiserver/pkg/util/shufflesharding"
)

// --- flowcontrol.apiserver.k8s.io/v1: API Priority and Fairness configuration, which every
// gateway replica applies to the requests it serves.

func flowSchemas() *registry.Resource {
	return &registry.Resource{GroupVersion: flowcontrolv1.SchemeGroupVersion, Name: "flowschemas", SingularName: "flowschema",
		Kind: "FlowSchema", Subresources: []string{"status"}, HasSpec: true, ResetStatusMeta: metav1.ResetObjectMetaForStatus,
		New: registry.Of[flowcontrolv1.FlowSchema](), NewList: registry.Of[flowcontrolv1.FlowSchemaList](),
		Validate: validateFlowSchema,
		TableOrder: func(a, b runtime.Object) int { // kube prints them by precedence, then name
			x, y := a.(*flowcontrolv1.FlowSchema), b.(*flowcontrolv1.FlowSchema)
			if c := cmp.Compare(x.Spec.MatchingPrecedence, y.Spec.MatchingPrecedence); c != 0 {
				return c
			}
			return cmp.Compare(x.Name, y.Name)
		},
		Columns: []metav1.TableColumnDefinition{
			registry.Column("PriorityLevel", "string", flowcontrolv1.PriorityLevelConfigurationReference{}.SwaggerDoc()["name"]),
			registry.Column("MatchingPrecedence", "string", flowcontrolv1.FlowSchemaSpec{}.SwaggerDoc()["matchingPrecedence"]),
			registry.Column("DistinguisherMethod", "string", flowcontrolv1.FlowSchemaSpec{}.SwaggerDoc()["distinguisherMethod"]),
			registry.AgeColumn,
			registry.Column("MissingPL", "string", "references a broken or non-existent PriorityLevelConfiguration"),
		},
		Cells: func(o runtime.Object) []any {
			fs := o.(*flowcontrolv1.FlowSchema)
			method := "<none>"
			if fs.Spec.DistinguisherMethod != nil {
				method = string(fs.Spec.DistinguisherMethod.Type)
			}
			missing := "?"
			for _, c := range fs.Status.Conditions {
				if c.Type == flowcontrolv1.FlowSchemaConditionDangling {
					missing = string(c.Status)
				}
			}
			return []any{fs.Spec.PriorityLevelConfiguration.Name, int64(fs.Spec.MatchingPrecedence), method, registry.AgeCell(o), missing}
		},
	}
}

func priorityLevelConfigurations() *registry.Resource {
	return &registry.Resource{GroupVersion: flowcontrolv1.SchemeGroupVersion, Name: "prioritylevelconfigurations",
		SingularName: "prioritylevelconfiguration", Kind: "PriorityLevelConfiguration", Subresources: []string{"status"}, HasSpec: true,
		ResetStatusMeta: metav1.ResetObjectMetaForStatus,
		New:             registry.Of[flowcontrolv1.PriorityLevelConfiguration](), NewList: registry.Of[flowcontrolv1.PriorityLevelConfigurationList](),
		Validate: validatePriorityLevel,
		Columns: []metav1.TableColumnDefinition{
			registry.Column("Type", "string", flowcontrolv1.PriorityLevelConfigurationSpec{}.SwaggerDoc()["type"]),
			registry.Column("NominalConcurrencyShares", "string", flowcontrolv1.LimitedPriorityLevelConfiguration{}.SwaggerDoc()["nominalConcurrencyShares"]),
			registry.Column("Queues", "string", flowcontrolv1.QueuingConfiguration{}.SwaggerDoc()["queues"]),
			registry.Column("HandSize", "string", flowcontrolv1.QueuingConfiguration{}.SwaggerDoc()["handSize"]),
			registry.Column("QueueLengthLimit", "string", flowcontrolv1.QueuingConfiguration{}.SwaggerDoc()["queueLengthLimit"]),
			registry.AgeColumn,
		},
		Cells: func(o runtime.Object) []any {
			pl := o.(*flowcontrolv1.PriorityLevelConfiguration)
			shares, queues, hand, limit := any("<none>"), any("<none>"), any("<none>"), any("<none>")
			if l := pl.Spec.Limited; l != nil {
				if l.NominalConcurrencyShares != nil {
					shares = int64(*l.NominalConcurrencyShares)
				}
				if q := l.LimitResponse.Queuing; q != nil {
					queues, hand, limit = int64(q.Queues), int64(q.HandSize), int64(q.QueueLengthLimit)
				}
			}
			return []any{string(pl.Spec.Type), shares, queues, hand, limit, registry.AgeCell(o)}
		},
	}
}

// --- validation, as kube's (same rules and messages); the mandatory objects' specs are fixed.

var (
	flowVerbs                = sets.New("get", "list", "create", "update", "delete", "deletecollection", "patch", "watch", "proxy")
	distinguishers           = sets.New(string(flowcontrolv1.FlowDistinguisherMethodByNamespaceType), string(flowcontrolv1.FlowDistinguisherMethodByUserType))
	subjectKinds             = sets.New(string(flowcontrolv1.SubjectKindGroup), string(flowcontrolv1.SubjectKindServiceAccount), string(flowcontrolv1.SubjectKindUser))
	limitResponseTypes       = sets.New(string(flowcontrolv1.LimitResponseTypeQueue), string(flowcontrolv1.LimitResponseTypeReject))
	priorityLevelTypes       = sets.New(string(flowcontrolv1.PriorityLevelEnablementExempt), string(flowcontrolv1.PriorityLevelEnablementLimited))
	maxQueues          int32 = 10 * 1000 * 1000
)

const nsErrIntro = "each member of this list must be '*' or a DNS-1123 label; "

func hasStar(list []string) bool { return slices.Contains(list, "*") }

// mandatoryFlowSchema and mandatoryPriorityLevel are kube's fixed objects, defaulted.
func mandatoryFlowSchema(name string) *flowcontrolv1.FlowSchema {
	for _, fs := range fcbootstrap.MandatoryFlowSchemas {
		if fs.Name == name {
			fs = fs.DeepCopy()
			defaulting.Set(fs)
			return fs
		}
	}
	return nil
}

func mandatoryPriorityLevel(name string) *flowcontrolv1.PriorityLevelConfiguration {
	for _, pl := range fcbootstrap.MandatoryPriorityLevelConfigurations {
		if pl.Name == name {
			pl = pl.DeepCopy()
			defaulting.Set(pl)
			return pl
		}
	}
	return nil
}

func validateFlowSchema(o runtime.Object) field.ErrorList {
	fs := o.(*flowcontrolv1.FlowSchema)
	spec, p := fs.Spec, field.NewPath("spec")
	var errs field.ErrorList
	if spec.MatchingPrecedence <= 0 {
		errs = append(errs, field.Invalid(p.Child("matchingPrecedence"), spec.MatchingPrecedence, "must be a positive value"))
	}
	if spec.MatchingPrecedence > 10000 {
		errs = append(errs, field.Invalid(p.Child("matchingPrecedence"), spec.MatchingPrecedence, "must not be greater than 10000"))
	}
	if spec.MatchingPrecedence == 1 && fs.Name != flowcontrolv1.FlowSchemaNameExempt {
		errs = append(errs, field.Invalid(p.Child("matchingPrecedence"), spec.MatchingPrecedence, "only the schema named 'exempt' may have matchingPrecedence 1"))
	}
	if d := spec.DistinguisherMethod; d != nil && !distinguishers.Has(string(d.Type)) {
		errs = append(errs, field.NotSupported(p.Child("distinguisherMethod").Child("type"), internalForm{d}, sets.List(distinguishers)))
	}
	if name := spec.PriorityLevelConfiguration.Name; name != "" {
		errs = append(errs, validate.InvalidEach(p.Child("priorityLevelConfiguration").Child("name"), name, validation.IsDNS1123Subdomain(name))...)
	} else {
		errs = append(errs, field.Required(p.Child("priorityLevelConfiguration").Child("name"), "must reference a priority level"))
	}
	for i, rule := range spec.Rules {
		errs = append(errs, validateFlowRule(rule, p.Child("rules").Index(i))...)
	}
	if m := mandatoryFlowSchema(fs.Name); m != nil && !equality.Semantic.DeepEqual(fs.Spec, m.Spec) {
		errs = append(errs, field.Invalid(p, internalForm{fs.Spec}, fmt.Sprintf("spec of '%s' must equal the fixed value", fs.Name)))
	}
	return append(errs, validateConditionTypes(conditionTypes(fs.Status.Conditions, func(c flowcontrolv1.FlowSchemaCondition) string { return string(c.Type) }))...)
}

func conditionTypes[C any](conds []C, typeOf func(C) string) []string {
	out := make([]string, len(conds))
	for i, c := range conds {
		out[i] = typeOf(c)
	}
	return out
}

func validateConditionTypes(types []string) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, t := range types {
		p := field.NewPath("status").Child("conditions").Index(i).Child("type")
		if seen.Has(t) {
			errs = append(errs, field.Duplicate(p, t))
		}
		seen.Insert(t)
		if t == "" {
			errs = append(errs, field.Required(p, ""))
		}
	}
	return errs
}

func validateFlowRule(rule flowcontrolv1.PolicyRulesWithSubjects, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(rule.Subjects) == 0 {
		errs = append(errs, field.Required(p.Child("subjects"), "subjects must contain at least one value"))
	}
	for i, s := range rule.Subjects {
		errs = append(errs, validateFlowSubject(s, p.Child("subjects").Index(i))...)
	}
	if len(rule.ResourceRules) == 0 && len(rule.NonResourceRules) == 0 {
		errs = append(errs, field.Required(p, "at least one of resourceRules and nonResourceRules has to be non-empty"))
	}
	for i, r := range rule.ResourceRules {
		q := p.Child("resourceRules").Index(i)
		errs = append(errs, validateFlowVerbs(r.Verbs, q.Child("verbs"))...)
		if len(r.APIGroups) == 0 {
			errs = append(errs, field.Required(q.Child("apiGroups"), "resource rules must supply at least one api group"))
		} else if len(r.APIGroups) > 1 && hasStar(r.APIGroups) {
			errs = append(errs, field.Invalid(q.Child("apiGroups"), r.APIGroups, "if '*' is present, must not specify other api groups"))
		}
		if len(r.Resources) == 0 {
			errs = append(errs, field.Required(q.Child("resources"), "resource rules must supply at least one resource"))
		} else if len(r.Resources) > 1 && hasStar(r.Resources) {
			errs = append(errs, field.Invalid(q.Child("resources"), r.Resources, "if '*' is present, must not specify other resources"))
		}
		switch {
		case len(r.Namespaces) == 0 && !r.ClusterScope:
			errs = append(errs, field.Required(q.Child("namespaces"), "resource rules that are not cluster scoped must supply at least one namespace"))
		case hasStar(r.Namespaces):
			if len(r.Namespaces) > 1 {
				errs = append(errs, field.Invalid(q.Child("namespaces"), r.Namespaces, "if '*' is present, must not specify other namespaces"))
			}
		default:
			for j, ns := range r.Namespaces {
				for _, msg := range apivalidation.ValidateNamespaceName(ns, false) {
					errs = append(errs, field.Invalid(q.Child("namespaces").Index(j), ns, nsErrIntro+msg))
				}
			}
		}
	}
	for i, r := range rule.NonResourceRules {
		q := p.Child("nonResourceRules").Index(i)
		errs = append(errs, validateFlowVerbs(r.Verbs, q.Child("verbs"))...)
		switch {
		case len(r.NonResourceURLs) == 0:
			errs = append(errs, field.Required(q.Child("nonResourceURLs"), "nonResourceURLs must contain at least one value"))
		case hasStar(r.NonResourceURLs):
			if len(r.NonResourceURLs) > 1 {
				errs = append(errs, field.Invalid(q.Child("nonResourceURLs"), r.NonResourceURLs, "if '*' is present, must not specify other non-resource URLs"))
			}
		default:
			for j, u := range r.NonResourceURLs {
				if msg := nonResourceURLProblem(u); msg != "" {
					errs = append(errs, field.Invalid(q.Child("nonResourceURLs").Index(j), u, msg))
				}
			}
		}
	}
	return errs
}

func nonResourceURLProblem(path string) string {
	switch {
	case path == "":
		return "must not be empty"
	case path == "/":
		return ""
	case !strings.HasPrefix(path, "/"):
		return "must start with slash"
	case strings.Contains(path, " "):
		return "must not contain white-space"
	case strings.Contains(path, "//"):
		return "must not contain double slash"
	}
	if n := strings.Count(path, "*"); n > 1 || (n == 1 && !strings.HasSuffix(path, "/*")) {
		return "wildcard can only do suffix matching"
	}
	return ""
}

func validateFlowVerbs(verbs []string, p *field.Path) field.ErrorList {
	switch {
	case len(verbs) == 0:
		return field.ErrorList{field.Required(p, "verbs must contain at least one value")}
	case hasStar(verbs):
		if len(verbs) > 1 {
			return field.ErrorList{field.Invalid(p, verbs, "if '*' is present, must not specify other verbs")}
		}
	case !flowVerbs.IsSuperset(sets.New(verbs...)):
		return field.ErrorList{field.NotSupported(p, verbs, sets.List(flowVerbs))}
	}
	return nil
}

func validateFlowSubject(s flowcontrolv1.Subject, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	forbid := func(member string, set bool, kind string) {
		if set {
			errs = append(errs, field.Forbidden(p.Child(member), fmt.Sprintf("%s is forbidden when subject kind is not '%s'", member, kind)))
		}
	}
	switch s.Kind {
	case flowcontrolv1.SubjectKindServiceAccount:
		q := p.Child("serviceAccount")
		if sa := s.ServiceAccount; sa == nil {
			errs = append(errs, field.Required(q, "serviceAccount is required when subject kind is 'ServiceAccount'"))
		} else {
			if sa.Name == "" {
				errs = append(errs, field.Required(q.Child("name"), ""))
			} else if sa.Name != flowcontrolv1.NameAll {
				errs = append(errs, validate.InvalidEach(q.Child("name"), sa.Name, apivalidation.ValidateServiceAccountName(sa.Name, false))...)
			}
			if sa.Namespace == "" {
				errs = append(errs, field.Required(q.Child("namespace"), "must specify namespace for service account"))
			} else {
				errs = append(errs, validate.InvalidEach(q.Child("namespace"), sa.Namespace, apivalidation.ValidateNamespaceName(sa.Namespace, false))...)
			}
		}
		forbid("user", s.User != nil, "User")
		forbid("group", s.Group != nil, "Group")
	case flowcontrolv1.SubjectKindUser:
		if s.User == nil {
			errs = append(errs, field.Required(p.Child("user"), "user is required when subject kind is 'User'"))
		} else if s.User.Name == "" {
			errs = append(errs, field.Required(p.Child("user").Child("name"), ""))
		}
		forbid("serviceAccount", s.ServiceAccount != nil, "ServiceAccount")
		forbid("group", s.Group != nil, "Group")
	case flowcontrolv1.SubjectKindGroup:
		if s.Group == nil {
			errs = append(errs, field.Required(p.Child("group"), "group is required when subject kind is 'Group'"))
		} else if s.Group.Name == "" {
			errs = append(errs, field.Required(p.Child("group").Child("name"), ""))
		}
		forbid("serviceAccount", s.ServiceAccount != nil, "ServiceAccount")
		forbid("user", s.User != nil, "User")
	default:
		errs = append(errs, field.NotSupported(p.Child("kind"), s.Kind, sets.List(subjectKinds)))
	}
	return errs
}

func validatePriorityLevel(o runtime.Object) field.ErrorList {
	pl := o.(*flowcontrolv1.PriorityLevelConfiguration)
	spec, p := pl.Spec, field.NewPath("spec")
	var errs field.ErrorList
	const preserveZero = "flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares"
	if _, ok := pl.Annotations[preserveZero]; ok {
		errs = append(errs, field.Forbidden(field.NewPath("metadata").Child("annotations"), fmt.Sprintf("annotation '%s' is forbidden", preserveZero)))
	}
	if (pl.Name == flowcontrolv1.PriorityLevelConfigurationNameExempt) != (spec.Type == flowcontrolv1.PriorityLevelEnablementExempt) {
		errs = append(errs, field.Invalid(p.Child("type"), spec.Type, "must be 'Exempt' if and only if `name` is 'exempt'"))
	}
	percent := func(v *int32, q *field.Path) {
		if v != nil && (*v < 0 || *v > 100) {
			errs = append(errs, field.Invalid(q, *v, "must be between 0 and 100, inclusive"))
		}
	}
	switch spec.Type {
	case flowcontrolv1.PriorityLevelEnablementExempt:
		if spec.Limited != nil {
			errs = append(errs, field.Forbidden(p.Child("limited"), "must be nil if the type is not Limited"))
		}
		if e := spec.Exempt; e != nil {
			if e.NominalConcurrencyShares != nil && *e.NominalConcurrencyShares < 0 {
				errs = append(errs, field.Invalid(p.Child("exempt").Child("nominalConcurrencyShares"), *e.NominalConcurrencyShares, "must be a non-negative integer"))
			}
			percent(e.LendablePercent, p.Child("exempt").Child("lendablePercent"))
		}
	case flowcontrolv1.PriorityLevelEnablementLimited:
		if spec.Exempt != nil {
			errs = append(errs, field.Forbidden(p.Child("exempt"), "must be nil if the type is Limited"))
		}
		l := spec.Limited
		if l == nil {
			errs = append(errs, field.Required(p.Child("limited"), "must not be empty when type is Limited"))
			break
		}
		q := p.Child("limited")
		if l.NominalConcurrencyShares != nil && *l.NominalConcurrencyShares < 0 {
			errs = append(errs, field.Invalid(q.Child("nominalConcurrencyShares"), *l.NominalConcurrencyShares, "must be a non-negative integer"))
		}
		errs = append(errs, validateLimitResponse(l.LimitResponse, q.Child("limitResponse"))...)
		percent(l.LendablePercent, q.Child("lendablePercent"))
		if l.BorrowingLimitPercent != nil && *l.BorrowingLimitPercent < 0 {
			errs = append(errs, field.Invalid(q.Child("borrowingLimitPercent"), *l.BorrowingLimitPercent, "if specified, must be a non-negative integer"))
		}
	case "":
		errs = append(errs, field.Required(p.Child("type"), ""))
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), spec.Type, sets.List(priorityLevelTypes)))
	}
	if m := mandatoryPriorityLevel(pl.Name); m != nil {
		if pl.Name == flowcontrolv1.PriorityLevelConfigurationNameExempt {
			have := pl.Spec.DeepCopy()
			have.Exempt = m.Spec.Exempt
			if !equality.Semantic.DeepEqual(&m.Spec, have) {
				errs = append(errs, field.Invalid(p, internalForm{pl.Spec}, fmt.Sprintf("spec of '%s' except the 'spec.exempt' field must equal the fixed value", pl.Name)))
			}
		} else if !equality.Semantic.DeepEqual(pl.Spec, m.Spec) {
			errs = append(errs, field.Invalid(p, internalForm{pl.Spec}, fmt.Sprintf("spec of '%s' must equal the fixed value", pl.Name)))
		}
	}
	return append(errs, validateConditionTypes(conditionTypes(pl.Status.Conditions, func(c flowcontrolv1.PriorityLevelConfigurationCondition) string { return string(c.Type) }))...)
}

func validateLimitResponse(lr flowcontrolv1.LimitResponse, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch lr.Type {
	case flowcontrolv1.LimitResponseTypeReject:
		if lr.Queuing != nil {
			errs = append(errs, field.Forbidden(p.Child("queuing"), "must be nil if limited.limitResponse.type is not Limited"))
		}
	case flowcontrolv1.LimitResponseTypeQueue:
		q := lr.Queuing
		if q == nil {
			errs = append(errs, field.Required(p.Child("queuing"), "must not be empty if limited.limitResponse.type is Limited"))
			break
		}
		qp := p.Child("queuing")
		if q.QueueLengthLimit <= 0 {
			errs = append(errs, field.Invalid(qp.Child("queueLengthLimit"), q.QueueLengthLimit, "must be positive"))
		}
		if q.Queues <= 0 {
			errs = append(errs, field.Invalid(qp.Child("queues"), q.Queues, "must be positive"))
		} else if q.Queues > maxQueues {
			errs = append(errs, field.Invalid(qp.Child("queues"), q.Queues, fmt.Sprintf("must not be greater than %d", maxQueues)))
		}
		switch {
		case q.HandSize <= 0:
			errs = append(errs, field.Invalid(qp.Child("handSize"), q.HandSize, "must be positive"))
		case q.HandSize > q.Queues:
			errs = append(errs, field.Invalid(qp.Child("handSize"), q.HandSize, fmt.Sprintf("should not be greater than queues (%d)", q.Queues)))
		case shufflesharding.RequiredEntropyBits(int(q.Queues), int(q.HandSize)) > shufflesharding.MaxHashBits:
			errs = append(errs, field.Invalid(qp.Child("handSize"), q.HandSize,
				fmt.Sprintf("required entropy bits of deckSize %d and handSize %d should not be greater than %d", q.Queues, q.HandSize, shufflesharding.MaxHashBits)))
		}
	case "":
		errs = append(errs, field.Required(p.Child("type"), ""))
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), lr.Type, sets.List(limitResponseTypes)))
	}
	return errs
}

// internalForm renders a value as kube's error messages show it: kube validates its internal
// types, which carry no JSON tags, so a struct appears with its Go field names, in field order,
// every field present (nil as null).
type internalForm struct{ v any }

func (f internalForm) MarshalJSON() ([]byte, error) {
	return json.Marshal(goNamed(reflect.ValueOf(f.v)))
}

// goNamed mirrors v with Go field names; structs become ordered pairs.
func goNamed(v reflect.Value) any {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return goNamed(v.Elem())
	case reflect.Struct:
		var b bytes.Buffer
		b.WriteByte('{')
		for i := 0; i < v.NumField(); i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			k, _ := json.Marshal(v.Type().Field(i).Name)
			val, _ := json.Marshal(goNamed(v.Field(i)))
			b.Write(k)
			b.WriteByte(':')
			b.Write(val)
		}
		b.WriteByte('}')
		return json.RawMessage(b.Bytes())
	case reflect.Slice:
		if v.IsNil() {
			return nil
		}
		out := make([]any, v.Len())
		for i := range out {
			out[i] = goNamed(v.Index(i))
		}
		return out
	default:
		return v.Interface()
	}
}
