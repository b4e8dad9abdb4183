package core

import (
	"fmt"
	"strings"

	"github.com/apichain/apichain/pkg/registry"
	"github.com/apichain/apichain/services/core/builtin/validate"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// limitRanges are v1 LimitRanges, with kube's defaults (a Container item's default limit is
// its max, its default request its default limit or min), validation and columns. The
// LimitRanger admission plugin applies them to pods.
func limitRanges() *registry.Resource {
	return &registry.Resource{GroupVersion: corev1.SchemeGroupVersion, Name: "limitranges", SingularName: "limitrange", Kind: "LimitRange",
		Namespaced: true, ShortNames: []string{"limits"}, HasSpec: true, NoGeneration: true,
		New: registry.Of[corev1.LimitRange](), NewList: registry.Of[corev1.LimitRangeList](),
		Validate: func(o runtime.Object) field.ErrorList { return validateLimitRange(o.(*corev1.LimitRange)) },
		Columns:  registry.CreatedAtColumns, Cells: registry.CreatedAtCells}
}

var standardLimitTypes = sets.New(string(corev1.LimitTypePod), string(corev1.LimitTypeContainer), string(corev1.LimitTypePersistentVolumeClaim))

// validateLimitRange is kube's ValidateLimitRange (same rules and messages).
func validateLimitRange(lr *corev1.LimitRange) field.ErrorList {
	var errs field.ErrorList
	seen := map[corev1.LimitType]bool{}
	fp := field.NewPath("spec", "limits")
	for i := range lr.Spec.Limits {
		q := fp.Index(i)
		item := &lr.Spec.Limits[i]
		errs = append(errs, validateLimitType(item.Type, q.Child("type"))...)
		if seen[item.Type] {
			errs = append(errs, field.Duplicate(q.Child("type"), item.Type))
		}
		seen[item.Type] = true
		keys := sets.New[string]()
		collect := func(list corev1.ResourceList, child string) {
			for k := range list {
				errs = append(errs, validate.LimitResourceName(item.Type, k, q.Child(child).Key(string(k)))...)
				keys.Insert(string(k))
			}
		}
		collect(item.Max, "max")
		collect(item.Min, "min")
		if item.Type == corev1.LimitTypePod {
			if len(item.Default) > 0 {
				errs = append(errs, field.Forbidden(q.Child("default"), "may not be specified when `type` is 'Pod'"))
			}
			if len(item.DefaultRequest) > 0 {
				errs = append(errs, field.Forbidden(q.Child("defaultRequest"), "may not be specified when `type` is 'Pod'"))
			}
		} else {
			collect(item.Default, "default")
			collect(item.DefaultRequest, "defaultRequest")
		}
		if item.Type == corev1.LimitTypePersistentVolumeClaim {
			_, hasMin := item.Min[corev1.ResourceStorage]
			_, hasMax := item.Max[corev1.ResourceStorage]
			if !hasMin && !hasMax {
				errs = append(errs, field.Required(q.Child("limits"), "either minimum or maximum storage value is required, but neither was provided"))
			}
		}
		collect(item.MaxLimitRequestRatio, "maxLimitRequestRatio")
		defaults, defaultRequests := item.Default, item.DefaultRequest
		if item.Type == corev1.LimitTypePod {
			defaults, defaultRequests = nil, nil
		}
		for _, k := range sets.List(keys) {
			name := corev1.ResourceName(k)
			minQ, hasMin := item.Min[name]
			maxQ, hasMax := item.Max[name]
			def, hasDef := defaults[name]
			defReq, hasDefReq := defaultRequests[name]
			ratio, hasRatio := item.MaxLimitRequestRatio[name]
			if hasMin && hasMax && minQ.Cmp(maxQ) > 0 {
				errs = append(errs, field.Invalid(q.Child("min").Key(k), minQ, fmt.Sprintf("min value %s is greater than max value %s", minQ.String(), maxQ.String())))
			}
			if hasDefReq && hasMin && minQ.Cmp(defReq) > 0 {
				errs = append(errs, field.Invalid(q.Child("defaultRequest").Key(k), defReq, fmt.Sprintf("min value %s is greater than default request value %s", minQ.String(), defReq.String())))
			}
			if hasDefReq && hasMax && defReq.Cmp(maxQ) > 0 {
				errs = append(errs, field.Invalid(q.Child("defaultRequest").Key(k), defReq, fmt.Sprintf("default request value %s is greater than max value %s", defReq.String(), maxQ.String())))
			}
			if hasDefReq && hasDef && defReq.Cmp(def) > 0 {
				errs = append(errs, field.Invalid(q.Child("defaultRequest").Key(k), defReq, fmt.Sprintf("default request value %s is greater than default limit value %s", defReq.String(), def.String())))
			}
			if hasDef && hasMin && minQ.Cmp(def) > 0 {
				errs = append(errs, field.Invalid(q.Child("default").Key(k), minQ, fmt.Sprintf("min value %s is greater than default value %s", minQ.String(), def.String())))
			}
			if hasDef && hasMax && def.Cmp(maxQ) > 0 {
				errs = append(errs, field.Invalid(q.Child("default").Key(k), maxQ, fmt.Sprintf("default value %s is greater than max value %s", def.String(), maxQ.String())))
			}
			if hasRatio && ratio.Cmp(*resource.NewQuantity(1, resource.DecimalSI)) < 0 {
				errs = append(errs, field.Invalid(q.Child("maxLimitRequestRatio").Key(k), ratio, fmt.Sprintf("ratio %s is less than 1", ratio.String())))
			}
			if hasRatio && hasMin && hasMax {
				ratioValue, minValue, maxValue := float64(ratio.Value()), minQ.Value(), maxQ.Value()
				if ratio.Value() < resource.MaxMilliValue && minValue < resource.MaxMilliValue && maxValue < resource.MaxMilliValue {
					ratioValue, minValue, maxValue = float64(ratio.MilliValue())/1000, minQ.MilliValue(), maxQ.MilliValue()
				}
				if limit := float64(maxValue) / float64(minValue); ratioValue > limit {
					errs = append(errs, field.Invalid(q.Child("maxLimitRequestRatio").Key(k), ratio, fmt.Sprintf("ratio %s is greater than max/min = %f", ratio.String(), limit)))
				}
			}
			if !validate.OvercommitAllowed(name) && hasDef && hasDefReq && def.Cmp(defReq) != 0 {
				errs = append(errs, field.Invalid(q.Child("defaultRequest").Key(k), defReq, fmt.Sprintf("default value %s must equal to defaultRequest value %s in %s", def.String(), defReq.String(), k)))
			}
		}
	}
	return errs
}

func validateLimitType(t corev1.LimitType, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validate.InvalidEach(p, t, validation.IsQualifiedName(string(t)))...)
	if len(errs) == 0 && !strings.Contains(string(t), "/") && !standardLimitTypes.Has(string(t)) {
		errs = append(errs, field.Invalid(p, t, "must be a standard limit type or fully qualified"))
	}
	return errs
}
