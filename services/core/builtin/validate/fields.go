package validate

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func SortedResourceNames(l corev1.ResourceList) []corev1.ResourceName {
	return sets.List(sets.KeySet(l))
}

// supported requires v and checks it is one of values (listed as given: kube lists some sorted).
func Supported[T ~string](p *field.Path, v T, values ...T) field.ErrorList {
	if v == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	for _, s := range values {
		if v == s {
			return nil
		}
	}
	return field.ErrorList{field.NotSupported(p, v, values)}
}

// LabelSelector is kube's label selector validation.
func LabelSelector(s *metav1.LabelSelector, p *field.Path) field.ErrorList {
	return metav1validation.ValidateLabelSelector(s, metav1validation.LabelSelectorValidationOptions{}, p)
}

// InvalidEach makes each message of a check an Invalid error of the value at p.
func InvalidEach(p *field.Path, value any, msgs []string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range msgs {
		errs = append(errs, field.Invalid(p, value, msg))
	}
	return errs
}

func DNS1123Label(v string, p *field.Path) field.ErrorList {
	return InvalidEach(p, v, validation.IsDNS1123Label(v))
}

// RequiredLabel: v is set and a DNS label.
func RequiredLabel(v string, p *field.Path) field.ErrorList {
	if v == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	return DNS1123Label(v, p)
}

func DNSSubdomain(v string, p *field.Path) field.ErrorList {
	return InvalidEach(p, v, validation.IsDNS1123Subdomain(v))
}

func QualifiedName(v string, p *field.Path) field.ErrorList {
	return InvalidEach(p, v, validation.IsQualifiedName(v))
}

func NonNegative(errs *field.ErrorList, p *field.Path, v int64) {
	if v < 0 {
		*errs = append(*errs, field.Invalid(p, v, "must be greater than or equal to 0"))
	}
}

func IntOrPercent(v *intstr.IntOrString, p *field.Path) field.ErrorList {
	if v == nil {
		return nil
	}
	if v.Type == intstr.String {
		if _, err := fmt.Sscanf(v.StrVal, "%d%%", new(int)); err != nil || v.StrVal[len(v.StrVal)-1] != '%' {
			return field.ErrorList{field.Invalid(p, v.StrVal, "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')")}
		}
	}
	if IntOrPercentValue(v) < 0 {
		return field.ErrorList{field.Invalid(p, v, "must be greater than or equal to 0")}
	}
	return nil
}

func IntOrPercentValue(v *intstr.IntOrString) int {
	if v == nil {
		return 0
	}
	if v.Type == intstr.Int {
		return v.IntValue()
	}
	var n int
	_, _ = fmt.Sscanf(v.StrVal, "%d%%", &n)
	return n
}

var tolerationEffects = sets.New(string(corev1.TaintEffectNoSchedule), string(corev1.TaintEffectPreferNoSchedule), string(corev1.TaintEffectNoExecute))

// Tolerations is kube's ValidateTolerations.
func Tolerations(tolerations []corev1.Toleration, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range tolerations {
		q := p.Index(i)
		if t.Key != "" {
			errs = append(errs, metav1validation.ValidateLabelName(t.Key, q.Child("key"))...)
		}
		if t.Key == "" && t.Operator != corev1.TolerationOpExists {
			errs = append(errs, field.Invalid(q.Child("operator"), t.Operator, "operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
		}
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			errs = append(errs, field.Invalid(q.Child("effect"), t.Effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
		}
		switch t.Operator {
		case corev1.TolerationOpEqual, "":
			errs = append(errs, InvalidEach(q.Child("operator"), t.Value, validation.IsValidLabelValue(t.Value))...)
		case corev1.TolerationOpExists:
			if t.Value != "" {
				errs = append(errs, field.Invalid(q.Child("operator"), t, "value must be empty when `operator` is 'Exists'"))
			}
		default:
			errs = append(errs, field.NotSupported(q.Child("operator"), t.Operator, []string{string(corev1.TolerationOpEqual), string(corev1.TolerationOpExists)}))
		}
		if t.Effect != "" && !tolerationEffects.Has(string(t.Effect)) {
			errs = append(errs, field.NotSupported(q.Child("effect"), t.Effect, sets.List(tolerationEffects)))
		}
	}
	return errs
}

// Provisioner is kube's: required, and a qualified name once lower-cased.
func Provisioner(name string, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	var errs field.ErrorList
	lower := strings.ToLower(name)
	errs = append(errs, InvalidEach(p, lower, validation.IsQualifiedName(lower))...)
	return errs
}

const FieldImmutableErrorMsg = "field is immutable"

func SortedNames(l corev1.ResourceList) []string {
	out := make([]string, 0, len(l))
	for k := range l {
		out = append(out, string(k))
	}
	sort.Strings(out)
	return out
}

// PortNumOrName checks a target port: a port number or an IANA service name.
func PortNumOrName(p intstr.IntOrString, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if p.Type == intstr.Int {
		errs = append(errs, InvalidEach(path, p.IntValue(), validation.IsValidPortNum(p.IntValue()))...)
		return errs
	}
	errs = append(errs, InvalidEach(path, p.StrVal, validation.IsValidPortName(p.StrVal))...)
	return errs
}

func BoolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
