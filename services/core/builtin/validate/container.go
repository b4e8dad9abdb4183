package validate

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateContainerHandlers is what kube checks of a regular container after its common
// fields: lifecycle hooks, then the liveness, readiness and startup probes.
func validateContainerHandlers(c *corev1.Container, grace *int64, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if l := c.Lifecycle; l != nil {
		lp := p.Child("lifecycle")
		if l.PostStart != nil {
			errs = append(errs, validateHandler(lifecycleHandler(l.PostStart), grace, lp.Child("postStart"))...)
		}
		if l.PreStop != nil {
			errs = append(errs, validateHandler(lifecycleHandler(l.PreStop), grace, lp.Child("preStop"))...)
		}
	}
	if pr := c.LivenessProbe; pr != nil {
		lp := p.Child("livenessProbe")
		errs = append(errs, validateProbe(pr, grace, lp)...)
		if pr.SuccessThreshold != 1 {
			errs = append(errs, field.Invalid(lp.Child("successThreshold"), pr.SuccessThreshold, "must be 1"))
		}
	}
	if pr := c.ReadinessProbe; pr != nil {
		rp := p.Child("readinessProbe")
		errs = append(errs, validateProbe(pr, grace, rp)...)
		if pr.TerminationGracePeriodSeconds != nil {
			errs = append(errs, field.Invalid(rp.Child("terminationGracePeriodSeconds"), pr.TerminationGracePeriodSeconds, "must not be set for readinessProbes"))
		}
	}
	if pr := c.StartupProbe; pr != nil {
		sp := p.Child("startupProbe")
		errs = append(errs, validateProbe(pr, grace, sp)...)
		if pr.SuccessThreshold != 1 {
			errs = append(errs, field.Invalid(sp.Child("successThreshold"), pr.SuccessThreshold, "must be 1"))
		}
	}
	return errs
}

// handler is what probes and lifecycle hooks share.
type handler struct {
	exec      *corev1.ExecAction
	httpGet   *corev1.HTTPGetAction
	tcpSocket *corev1.TCPSocketAction
	grpc      *corev1.GRPCAction
	sleep     *corev1.SleepAction
}

func lifecycleHandler(h *corev1.LifecycleHandler) handler {
	return handler{exec: h.Exec, httpGet: h.HTTPGet, tcpSocket: h.TCPSocket, sleep: h.Sleep}
}

// validateProbe is kube's: one handler, and counts that are not negative.
func validateProbe(pr *corev1.Probe, grace *int64, p *field.Path) field.ErrorList {
	h := pr.ProbeHandler
	errs := validateHandler(handler{exec: h.Exec, httpGet: h.HTTPGet, tcpSocket: h.TCPSocket, grpc: h.GRPC}, grace, p)
	for _, f := range []struct {
		name string
		v    int32
	}{{"initialDelaySeconds", pr.InitialDelaySeconds}, {"timeoutSeconds", pr.TimeoutSeconds}, {"periodSeconds", pr.PeriodSeconds},
		{"successThreshold", pr.SuccessThreshold}, {"failureThreshold", pr.FailureThreshold}} {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(f.v), p.Child(f.name))...)
	}
	if g := pr.TerminationGracePeriodSeconds; g != nil && *g <= 0 {
		errs = append(errs, field.Invalid(p.Child("terminationGracePeriodSeconds"), *g, "must be greater than 0"))
	}
	return errs
}

// validateHandler is kube's: exactly one of exec, httpGet, tcpSocket, grpc and sleep.
func validateHandler(h handler, grace *int64, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	n := 0
	one := func(set bool, name string, check func(*field.Path) field.ErrorList) {
		if !set {
			return
		}
		if n > 0 {
			errs = append(errs, field.Forbidden(p.Child(name), "may not specify more than 1 handler type"))
			return
		}
		n++
		errs = append(errs, check(p.Child(name))...)
	}
	one(h.exec != nil, "exec", func(p *field.Path) field.ErrorList {
		if len(h.exec.Command) == 0 {
			return field.ErrorList{field.Required(p.Child("command"), "")}
		}
		return nil
	})
	one(h.httpGet != nil, "httpGet", func(p *field.Path) field.ErrorList { return validateHTTPGet(h.httpGet, p) })
	one(h.tcpSocket != nil, "tcpSocket", func(p *field.Path) field.ErrorList { return PortNumOrName(h.tcpSocket.Port, p.Child("port")) })
	one(h.grpc != nil, "grpc", func(p *field.Path) field.ErrorList {
		return PortNumOrName(intstr.FromInt32(h.grpc.Port), p.Child("port"))
	})
	one(h.sleep != nil, "sleep", func(p *field.Path) field.ErrorList {
		if grace != nil && (h.sleep.Seconds < 0 || h.sleep.Seconds > *grace) {
			return field.ErrorList{field.Invalid(p, h.sleep.Seconds, fmt.Sprintf("must be non-negative and less than terminationGracePeriodSeconds (%d)", *grace))}
		}
		return nil
	})
	if n == 0 {
		errs = append(errs, field.Required(p, "must specify a handler type"))
	}
	return errs
}

func validateHTTPGet(g *corev1.HTTPGetAction, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if g.Path == "" {
		errs = append(errs, field.Required(p.Child("path"), ""))
	}
	errs = append(errs, PortNumOrName(g.Port, p.Child("port"))...)
	if g.Scheme != corev1.URISchemeHTTP && g.Scheme != corev1.URISchemeHTTPS {
		errs = append(errs, field.NotSupported(p.Child("scheme"), g.Scheme, []corev1.URIScheme{corev1.URISchemeHTTP, corev1.URISchemeHTTPS}))
	}
	for _, h := range g.HTTPHeaders {
		errs = append(errs, InvalidEach(p.Child("httpHeaders"), h.Name, validation.IsHTTPHeaderName(h.Name))...)
	}
	return errs
}

// validateContainerSecurityContext is kube's ValidateSecurityContext (privileged containers
// are checked by the caller, against --allow-privileged).
func validateContainerSecurityContext(sc *corev1.SecurityContext, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if sc.RunAsUser != nil {
		errs = append(errs, InvalidEach(p.Child("runAsUser"), *sc.RunAsUser, validation.IsValidUserID(*sc.RunAsUser))...)
	}
	if sc.RunAsGroup != nil {
		errs = append(errs, InvalidEach(p.Child("runAsGroup"), *sc.RunAsGroup, validation.IsValidGroupID(*sc.RunAsGroup))...)
	}
	if pm := sc.ProcMount; pm != nil && *pm != corev1.DefaultProcMount && *pm != corev1.UnmaskedProcMount {
		errs = append(errs, field.NotSupported(p.Child("procMount"), *pm, []corev1.ProcMountType{corev1.DefaultProcMount, corev1.UnmaskedProcMount}))
	}
	errs = append(errs, validateSeccompProfile(sc.SeccompProfile, p.Child("seccompProfile"))...)
	if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		if sc.Privileged != nil && *sc.Privileged {
			errs = append(errs, field.Invalid(p, internalValue{sc}, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
		}
		if sc.Capabilities != nil {
			for _, c := range sc.Capabilities.Add {
				if c == "CAP_SYS_ADMIN" {
					errs = append(errs, field.Invalid(p, internalValue{sc}, "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"))
				}
			}
		}
	}
	return errs
}

// validatePodSecurityContext is kube's validatePodSpecSecurityContext, less the Windows and
// AppArmor options.
func validatePodSecurityContext(sc *corev1.PodSecurityContext, p *field.Path) field.ErrorList {
	if sc == nil {
		return nil
	}
	var errs field.ErrorList
	if sc.FSGroup != nil {
		errs = append(errs, InvalidEach(p.Child("fsGroup"), *sc.FSGroup, validation.IsValidGroupID(*sc.FSGroup))...)
	}
	if sc.RunAsUser != nil {
		errs = append(errs, InvalidEach(p.Child("runAsUser"), *sc.RunAsUser, validation.IsValidUserID(*sc.RunAsUser))...)
	}
	if sc.RunAsGroup != nil {
		errs = append(errs, InvalidEach(p.Child("runAsGroup"), *sc.RunAsGroup, validation.IsValidGroupID(*sc.RunAsGroup))...)
	}
	for i, g := range sc.SupplementalGroups {
		errs = append(errs, InvalidEach(p.Child("supplementalGroups").Index(i), g, validation.IsValidGroupID(g))...)
	}
	names := sets.New[string]()
	for i, s := range sc.Sysctls {
		np := p.Child("sysctls").Index(i).Child("name")
		switch {
		case s.Name == "":
			errs = append(errs, field.Required(np, ""))
		case len(s.Name) > 253 || !sysctlName.MatchString(s.Name):
			errs = append(errs, field.Invalid(np, s.Name, "must have at most 253 characters and match regex "+sysctlName.String()))
		case names.Has(s.Name):
			errs = append(errs, field.Duplicate(np, s.Name))
		}
		names.Insert(s.Name)
	}
	if pol := sc.FSGroupChangePolicy; pol != nil && *pol != corev1.FSGroupChangeAlways && *pol != corev1.FSGroupChangeOnRootMismatch {
		errs = append(errs, field.NotSupported(p.Child("fsGroupChangePolicy"), pol, []corev1.PodFSGroupChangePolicy{corev1.FSGroupChangeAlways, corev1.FSGroupChangeOnRootMismatch}))
	}
	errs = append(errs, validateSeccompProfile(sc.SeccompProfile, p.Child("seccompProfile"))...)
	if pol := sc.SupplementalGroupsPolicy; pol != nil && *pol != corev1.SupplementalGroupsPolicyMerge && *pol != corev1.SupplementalGroupsPolicyStrict {
		errs = append(errs, field.NotSupported(p.Child("supplementalGroupsPolicy"), pol, []corev1.SupplementalGroupsPolicy{corev1.SupplementalGroupsPolicyMerge, corev1.SupplementalGroupsPolicyStrict}))
	}
	return errs
}

// sysctlName is kube's sysctl name pattern (dots or slashes between segments).
var sysctlName = regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$`)

// validateSeccompProfile is kube's validateSeccompProfileField.
func validateSeccompProfile(sp *corev1.SeccompProfile, p *field.Path) field.ErrorList {
	if sp == nil {
		return nil
	}
	var errs field.ErrorList
	switch sp.Type {
	case corev1.SeccompProfileTypeLocalhost, corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined:
	case "":
		errs = append(errs, field.Required(p.Child("type"), "type is required when seccompProfile is set"))
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), sp.Type, []corev1.SeccompProfileType{corev1.SeccompProfileTypeLocalhost,
			corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined}))
	}
	switch {
	case sp.Type == corev1.SeccompProfileTypeLocalhost && sp.LocalhostProfile == nil:
		errs = append(errs, field.Required(p.Child("localhostProfile"), "must be set when seccomp type is Localhost"))
	case sp.Type == corev1.SeccompProfileTypeLocalhost:
		errs = append(errs, validateLocalDescendingPath(*sp.LocalhostProfile, p.Child("localhostProfile"))...)
	case sp.LocalhostProfile != nil:
		errs = append(errs, field.Invalid(p.Child("localhostProfile"), internalValue{sp}, "can only be set when seccomp type is Localhost"))
	}
	return errs
}

// validateLocalDescendingPath: a relative path that does not climb out with "..".
func validateLocalDescendingPath(path string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if strings.HasPrefix(path, "/") {
		errs = append(errs, field.Invalid(p, path, "must be a relative path"))
	}
	for _, part := range strings.Split(path, "/") {
		if part == ".." {
			errs = append(errs, field.Invalid(p, path, "must not contain '..'"))
			break
		}
	}
	return errs
}

// internalValue prints an API struct in an Invalid error as kube prints its internal form
// there: Go field names in declaration order, every field, nil as null (kube validates its
// internal types, which have no JSON names).
type internalValue struct{ v any }

// MarshalJSON is how field errors print their value.
func (i internalValue) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	writeInternal(&b, reflect.ValueOf(i.v))
	return []byte(b.String()), nil
}

func writeInternal(b *strings.Builder, v reflect.Value) {
	if !v.IsValid() {
		b.WriteString("null")
		return
	}
	if m, ok := v.Interface().(json.Marshaler); ok && (v.Kind() != reflect.Pointer || !v.IsNil()) {
		data, _ := m.MarshalJSON()
		b.Write(data)
		return
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			b.WriteString("null")
			return
		}
		writeInternal(b, v.Elem())
	case reflect.Struct:
		b.WriteByte('{')
		for i := range v.NumField() {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(b, "%q:", v.Type().Field(i).Name)
			writeInternal(b, v.Field(i))
		}
		b.WriteByte('}')
	case reflect.Slice:
		if v.IsNil() {
			b.WriteString("null")
			return
		}
		b.WriteByte('[')
		for i := range v.Len() {
			if i > 0 {
				b.WriteByte(',')
			}
			writeInternal(b, v.Index(i))
		}
		b.WriteByte(']')
	default:
		data, _ := json.Marshal(v.Interface())
		b.Write(data)
	}
}
