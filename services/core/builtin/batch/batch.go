package batch

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/apichain/apichain/pkg/registry"
	"github.com/apichain/apichain/services/core/builtin/core"
	"github.com/apichain/apichain/services/core/builtin/validate"
	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// jobs are batch/v1 Jobs: kube's generated selector and labels, validation and columns.
func jobs() *registry.Resource {
	return &registry.Resource{GroupVersion: batchv1.SchemeGroupVersion, Name: "jobs", SingularName: "job", Kind: "Job", Namespaced: true,
		Categories: []string{"all"}, Subresources: []string{"status"}, HasSpec: true,
		New: registry.Of[batchv1.Job](), NewList: registry.Of[batchv1.JobList](),
		PrepareForCreate: func(_ context.Context, o runtime.Object) {
			j := o.(*batchv1.Job)
			if !ptr.Deref(j.Spec.ManualSelector, false) {
				generateJobSelector(j)
			}
		},
		Validate: func(o runtime.Object) field.ErrorList {
			return validateJob(&o.(*batchv1.Job).Spec, field.NewPath("spec"))
		},
		ValidateUpdate: func(o, old runtime.Object) field.ErrorList {
			j, prev := o.(*batchv1.Job), old.(*batchv1.Job)
			var errs field.ErrorList
			sp := field.NewPath("spec")
			if !apiequality.Semantic.DeepEqual(j.Spec.Selector, prev.Spec.Selector) {
				errs = append(errs, field.Invalid(sp.Child("selector"), j.Spec.Selector, validate.FieldImmutableErrorMsg))
			}
			if !apiequality.Semantic.DeepEqual(j.Spec.Template, prev.Spec.Template) && !ptr.Deref(prev.Spec.Suspend, false) {
				errs = append(errs, field.Invalid(sp.Child("template"), j.Spec.Template, validate.FieldImmutableErrorMsg))
			}
			if !apiequality.Semantic.DeepEqual(j.Spec.CompletionMode, prev.Spec.CompletionMode) {
				errs = append(errs, field.Invalid(sp.Child("completionMode"), j.Spec.CompletionMode, validate.FieldImmutableErrorMsg))
			}
			return errs
		},
		FieldLabels: func(o runtime.Object) fields.Set {
			return fields.Set{"status.successful": fmt.Sprint(o.(*batchv1.Job).Status.Succeeded)}
		},
		FieldLabelConversion: func(label, value string) (string, string, error) {
			switch label {
			case "metadata.name", "metadata.namespace", "status.successful":
				return label, value, nil
			}
			return "", "", fmt.Errorf("field label %q not supported for Job", label)
		},
		Columns: []metav1.TableColumnDefinition{
			registry.Column("Status", "string", "Status of the job."),
			registry.Column("Completions", "string", batchv1.JobStatus{}.SwaggerDoc()["succeeded"]),
			registry.Column("Duration", "string", "Time required to complete the job."),
			registry.AgeColumn,
			registry.Wide(registry.Column("Containers", "string", "Names of each container in the template.")),
			registry.Wide(registry.Column("Images", "string", "Images referenced by each container in the template.")),
			registry.Wide(registry.Column("Selector", "string", batchv1.JobSpec{}.SwaggerDoc()["selector"])),
		},
		Cells: func(o runtime.Object) []any {
			j := o.(*batchv1.Job)
			var completions string
			switch p := ptr.Deref(j.Spec.Parallelism, 0); {
			case j.Spec.Completions != nil:
				completions = fmt.Sprintf("%d/%d", j.Status.Succeeded, *j.Spec.Completions)
			case p > 1:
				completions = fmt.Sprintf("%d/1 of %d", j.Status.Succeeded, p)
			default:
				completions = fmt.Sprintf("%d/1", j.Status.Succeeded)
			}
			var took string
			switch {
			case j.Status.StartTime == nil:
			case j.Status.CompletionTime == nil:
				took = duration.HumanDuration(time.Since(j.Status.StartTime.Time))
			default:
				took = duration.HumanDuration(j.Status.CompletionTime.Sub(j.Status.StartTime.Time))
			}
			names, images := core.ContainerCells(j.Spec.Template.Spec.Containers)
			return []any{jobStatus(j), completions, took, registry.AgeCell(o), names, images, metav1.FormatLabelSelector(j.Spec.Selector)}
		},
	}
}

func jobStatus(j *batchv1.Job) string {
	has := func(t batchv1.JobConditionType) bool {
		for _, c := range j.Status.Conditions {
			if c.Type == t && c.Status == corev1.ConditionTrue {
				return true
			}
		}
		return false
	}
	switch {
	case has(batchv1.JobComplete):
		return "Complete"
	case has(batchv1.JobFailed):
		return "Failed"
	case j.DeletionTimestamp != nil:
		return "Terminating"
	case has(batchv1.JobSuspended):
		return "Suspended"
	case has(batchv1.JobFailureTarget):
		return "FailureTarget"
	case has(batchv1.JobSuccessCriteriaMet):
		return "SuccessCriteriaMet"
	}
	return "Running"
}

// generateJobSelector labels the template with the job's name and UID and selects on the UID.
func generateJobSelector(j *batchv1.Job) {
	if j.Spec.Template.Labels == nil {
		j.Spec.Template.Labels = map[string]string{}
	}
	for _, l := range []struct{ key, value string }{{"job-name", j.Name}, {batchv1.JobNameLabel, j.Name},
		{"controller-uid", string(j.UID)}, {batchv1.ControllerUidLabel, string(j.UID)}} {
		if _, ok := j.Spec.Template.Labels[l.key]; !ok {
			j.Spec.Template.Labels[l.key] = l.value
		}
	}
	if j.Spec.Selector == nil {
		j.Spec.Selector = &metav1.LabelSelector{}
	}
	if j.Spec.Selector.MatchLabels == nil {
		j.Spec.Selector.MatchLabels = map[string]string{}
	}
	if _, ok := j.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel]; !ok {
		j.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel] = string(j.UID)
	}
}

// validateJob is kube's ValidateJobSpec: the spec's own rules, then its selector, which must
// match the template's labels.
func validateJob(s *batchv1.JobSpec, p *field.Path) field.ErrorList {
	errs := validateJobSpec(s, p)
	if s.Selector == nil {
		errs = append(errs, field.Required(p.Child("selector"), ""))
	} else {
		errs = append(errs, validate.LabelSelector(s.Selector, p.Child("selector"))...)
	}
	if sel, err := metav1.LabelSelectorAsSelector(s.Selector); err == nil && !sel.Matches(labels.Set(s.Template.Labels)) {
		errs = append(errs, field.Invalid(p.Child("template", "metadata", "labels"), s.Template.Labels, "`selector` does not match template `labels`"))
	}
	return errs
}

// validateJobSpec is the part of a job's validation a CronJob's job template shares.
func validateJobSpec(s *batchv1.JobSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	nonNegative := func(name string, v *int32) {
		if v != nil && *v < 0 {
			errs = append(errs, field.Invalid(p.Child(name), int64(*v), "must be greater than or equal to 0"))
		}
	}
	nonNegative("parallelism", s.Parallelism)
	nonNegative("completions", s.Completions)
	if s.ActiveDeadlineSeconds != nil && *s.ActiveDeadlineSeconds < 0 {
		errs = append(errs, field.Invalid(p.Child("activeDeadlineSeconds"), *s.ActiveDeadlineSeconds, "must be greater than or equal to 0"))
	}
	nonNegative("backoffLimit", s.BackoffLimit)
	nonNegative("ttlSecondsAfterFinished", s.TTLSecondsAfterFinished)
	nonNegative("backoffLimitPerIndex", s.BackoffLimitPerIndex)
	nonNegative("maxFailedIndexes", s.MaxFailedIndexes)
	if m := s.CompletionMode; m != nil {
		if *m != batchv1.NonIndexedCompletion && *m != batchv1.IndexedCompletion {
			errs = append(errs, field.NotSupported(p.Child("completionMode"), *m, []batchv1.CompletionMode{batchv1.NonIndexedCompletion, batchv1.IndexedCompletion}))
		}
		if *m == batchv1.IndexedCompletion && s.Completions == nil {
			errs = append(errs, field.Required(p.Child("completions"), fmt.Sprintf("when completion mode is %s", batchv1.IndexedCompletion)))
		}
	}
	if ptr.Deref(s.CompletionMode, batchv1.NonIndexedCompletion) == batchv1.NonIndexedCompletion {
		if s.BackoffLimitPerIndex != nil {
			errs = append(errs, field.Invalid(p.Child("backoffLimitPerIndex"), *s.BackoffLimitPerIndex, "requires indexed completion mode"))
		}
		if s.MaxFailedIndexes != nil {
			errs = append(errs, field.Invalid(p.Child("maxFailedIndexes"), *s.MaxFailedIndexes, "requires indexed completion mode"))
		}
	}
	tp := p.Child("template")
	errs = append(errs, validate.PodTemplate(&s.Template, tp)...)
	switch rp := s.Template.Spec.RestartPolicy; {
	case rp == corev1.RestartPolicyAlways || rp == "":
		errs = append(errs, field.Required(tp.Child("spec", "restartPolicy"), fmt.Sprintf("valid values: %q, %q", corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever)))
	case rp != corev1.RestartPolicyOnFailure && rp != corev1.RestartPolicyNever:
		errs = append(errs, field.NotSupported(tp.Child("spec", "restartPolicy"), rp, []corev1.RestartPolicy{corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever}))
	case s.PodFailurePolicy != nil && rp != corev1.RestartPolicyNever:
		errs = append(errs, field.Invalid(tp.Child("spec", "restartPolicy"), rp, fmt.Sprintf("only %q is supported when podFailurePolicy is specified", corev1.RestartPolicyNever)))
	}
	return errs
}

// cronJobs are batch/v1 CronJobs: kube's schedule and time zone validation, and columns.
func cronJobs() *registry.Resource {
	return &registry.Resource{GroupVersion: batchv1.SchemeGroupVersion, Name: "cronjobs", SingularName: "cronjob", Kind: "CronJob", Namespaced: true,
		ShortNames: []string{"cj"}, Categories: []string{"all"}, Subresources: []string{"status"}, HasSpec: true,
		New: registry.Of[batchv1.CronJob](), NewList: registry.Of[batchv1.CronJobList](),
		Validate: func(o runtime.Object) field.ErrorList { return validateCronJob(o.(*batchv1.CronJob), nil) },
		ValidateUpdate: func(o, old runtime.Object) field.ErrorList {
			return validateCronJob(o.(*batchv1.CronJob), old.(*batchv1.CronJob))
		},
		Columns: []metav1.TableColumnDefinition{
			registry.Column("Schedule", "string", batchv1.CronJobSpec{}.SwaggerDoc()["schedule"]),
			registry.Column("Timezone", "string", batchv1.CronJobSpec{}.SwaggerDoc()["timeZone"]),
			registry.Column("Suspend", "boolean", batchv1.CronJobSpec{}.SwaggerDoc()["suspend"]),
			registry.Column("Active", "integer", batchv1.CronJobStatus{}.SwaggerDoc()["active"]),
			registry.Column("Last Schedule", "string", batchv1.CronJobStatus{}.SwaggerDoc()["lastScheduleTime"]),
			registry.AgeColumn,
			registry.Wide(registry.Column("Containers", "string", "Names of each container in the template.")),
			registry.Wide(registry.Column("Images", "string", "Images referenced by each container in the template.")),
			registry.Wide(registry.Column("Selector", "string", batchv1.JobSpec{}.SwaggerDoc()["selector"])),
		},
		Cells: func(o runtime.Object) []any {
			c := o.(*batchv1.CronJob)
			last := "<none>"
			if c.Status.LastScheduleTime != nil {
				last = duration.HumanDuration(time.Since(c.Status.LastScheduleTime.Time))
			}
			tz := "<none>"
			if c.Spec.TimeZone != nil {
				tz = *c.Spec.TimeZone
			}
			suspend := "<unset>"
			if c.Spec.Suspend != nil {
				suspend = map[bool]string{true: "True", false: "False"}[*c.Spec.Suspend]
			}
			names, images := core.ContainerCells(c.Spec.JobTemplate.Spec.Template.Spec.Containers)
			return []any{c.Spec.Schedule, tz, suspend, int64(len(c.Status.Active)), last, registry.AgeCell(o),
				names, images, metav1.FormatLabelSelector(c.Spec.JobTemplate.Spec.Selector)}
		},
	}
}

// validTimeZonePart is one component of an IANA time zone name, as kube checks it.
var validTimeZonePart = regexp.MustCompile(`^[A-Za-z\.\-_0-9+]{1,14}$`)

// validateCronJob is kube's CronJob validation; old is nil on create.
func validateCronJob(c, old *batchv1.CronJob) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("spec")
	if len(c.Name) > 52 {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), c.Name, "must be no more than 52 characters"))
	}
	if c.Spec.Schedule == "" {
		errs = append(errs, field.Required(p.Child("schedule"), ""))
	} else {
		sp := p.Child("schedule")
		if err := parseCron(c.Spec.Schedule); err != nil {
			errs = append(errs, field.Invalid(sp, c.Spec.Schedule, err.Error()))
		}
		allowTZ := old != nil && strings.Contains(old.Spec.Schedule, "TZ")
		switch {
		case allowTZ && strings.Contains(c.Spec.Schedule, "TZ") && c.Spec.TimeZone != nil:
			errs = append(errs, field.Invalid(sp, c.Spec.Schedule, "cannot use both timeZone field and TZ or CRON_TZ in schedule"))
		case !allowTZ && strings.Contains(c.Spec.Schedule, "TZ"):
			errs = append(errs, field.Invalid(sp, c.Spec.Schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
		}
	}
	if d := c.Spec.StartingDeadlineSeconds; d != nil && *d < 0 {
		errs = append(errs, field.Invalid(p.Child("startingDeadlineSeconds"), *d, "must be greater than or equal to 0"))
	}
	if old == nil || !ptr.Equal(old.Spec.TimeZone, c.Spec.TimeZone) {
		errs = append(errs, validateTimeZone(c.Spec.TimeZone, p.Child("timeZone"))...)
	}
	switch cp := c.Spec.ConcurrencyPolicy; cp {
	case batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent:
	case "":
		errs = append(errs, field.Required(p.Child("concurrencyPolicy"), ""))
	default:
		errs = append(errs, field.NotSupported(p.Child("concurrencyPolicy"), cp, []batchv1.ConcurrencyPolicy{batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent}))
	}
	jp := p.Child("jobTemplate", "spec")
	errs = append(errs, validateJobSpec(&c.Spec.JobTemplate.Spec, jp)...)
	if c.Spec.JobTemplate.Spec.Selector != nil {
		errs = append(errs, field.Invalid(jp.Child("selector"), c.Spec.JobTemplate.Spec.Selector, "`selector` will be auto-generated"))
	}
	if ms := c.Spec.JobTemplate.Spec.ManualSelector; ms != nil && *ms {
		errs = append(errs, field.NotSupported(jp.Child("manualSelector"), ms, []string{"nil", "false"}))
	}
	for _, f := range []struct {
		name string
		v    *int32
	}{{"successfulJobsHistoryLimit", c.Spec.SuccessfulJobsHistoryLimit}, {"failedJobsHistoryLimit", c.Spec.FailedJobsHistoryLimit}} {
		if f.v != nil && *f.v < 0 {
			errs = append(errs, field.Invalid(p.Child(f.name), *f.v, "must be greater than or equal to 0"))
		}
	}
	return errs
}

func validateTimeZone(tz *string, p *field.Path) field.ErrorList {
	if tz == nil {
		return nil
	}
	if *tz == "" {
		return field.ErrorList{field.Invalid(p, tz, "timeZone must be nil or non-empty string")}
	}
	for _, part := range strings.Split(*tz, "/") {
		if part == "." || part == ".." || strings.HasPrefix(part, "-") || !validTimeZonePart.MatchString(part) {
			return field.ErrorList{field.Invalid(p, tz, "unknown time zone "+*tz)}
		}
	}
	var errs field.ErrorList
	if strings.EqualFold(*tz, "Local") {
		errs = append(errs, field.Invalid(p, tz, "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"))
	}
	if _, err := time.LoadLocation(*tz); err != nil {
		errs = append(errs, field.Invalid(p, tz, err.Error()))
	}
	return errs
}

// parseCron checks a standard cron schedule with the parser kube uses.
func parseCron(schedule string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("invalid schedule format: %v", r)
		}
	}()
	_, err = cron.ParseStandard(schedule)
	return err
}
