package admission

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"time"

	admissionmetrics "k8s.io/apiserver/pkg/admission/metrics"

	"github.com/apichain/apichain/pkg/admission/plugin/defaults"
	"github.com/apichain/apichain/pkg/admission/plugin/limitranger"
	"github.com/apichain/apichain/pkg/admission/plugin/namespacelifecycle"
	"github.com/apichain/apichain/pkg/admission/plugin/podsecurity"
	"github.com/apichain/apichain/pkg/admission/plugin/priority"
	"github.com/apichain/apichain/pkg/admission/plugin/resourcequota"
	"github.com/apichain/apichain/pkg/admission/plugin/serviceaccount"
	"github.com/apichain/apichain/pkg/admission/plugins"
	"github.com/apichain/apichain/pkg/admission/policy"
	"github.com/apichain/apichain/pkg/admission/webhook"
	"github.com/apichain/apichain/pkg/backend"
	"github.com/apichain/apichain/pkg/registry"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
)

// Chain is a backend's admission in kube's order: the built-in mutating plugins
// (NamespaceLifecycle everywhere; LimitRanger, ServiceAccount, Priority,
// DefaultTolerationSeconds, DefaultStorageClass, DefaultIngressClass,
// StorageObjectInUseProtection where pods are served), MutatingAdmissionPolicies, then
// mutating webhooks; then (after the kind's own validation) the built-in validating plugins
// (Priority, LimitRanger, PodSecurity), ValidatingAdmissionPolicies, validating webhooks, and
// ResourceQuota last (where resource quotas are served). A part is nil when its plugin is
// disabled (--disable-admission-plugins).
type Chain struct {
	Mutating           []Mutator   // built-in plugins, in order
	Validating         []Validator // built-in plugins, in order
	MutatingPolicies   *policy.MutatingPolicies
	MutatingWebhooks   *webhook.Webhooks
	Policies           *policy.Policies
	ValidatingWebhooks *webhook.Webhooks
	ResourceQuota      *resourcequota.ResourceQuota
}

// Mutator is a built-in plugin that may change the object in place.
type Mutator interface {
	Admit(ctx context.Context, a admission.Attributes) error
}

// Validator is a built-in plugin that may refuse a request.
type Validator interface {
	Validate(ctx context.Context, a admission.Attributes) error
}

// observe records one plugin's call in kube's
// apiserver_admission_controller_admission_duration_seconds, under its name and step
// ("admit" or "validate"), as kube's chain does for every plugin.
func observe(ctx context.Context, start time.Time, err error, a admission.Attributes, step, plugin string) {
	admissionmetrics.Metrics.ObserveAdmissionController(ctx, time.Since(start), err != nil, a, step, plugin)
}

// namedMutator is a built-in mutating plugin and the name its calls are measured under.
type namedMutator struct {
	name string
	Mutator
}

func (m namedMutator) Admit(ctx context.Context, a admission.Attributes) error {
	start := time.Now()
	err := m.Mutator.Admit(ctx, a)
	observe(ctx, start, err, a, "admit", m.name)
	return err
}

// namedValidator is a built-in validating plugin and the name its calls are measured under.
type namedValidator struct {
	name string
	Validator
}

func (v namedValidator) Validate(ctx context.Context, a admission.Attributes) error {
	start := time.Now()
	err := v.Validator.Validate(ctx, a)
	observe(ctx, start, err, a, "validate", v.name)
	return err
}

// Admit runs mutating admission: the built-in plugins, the policies, the webhooks (with their
// own reinvocation), and once more the policies with reinvocationPolicy IfNeeded if the
// webhooks changed what the policies had made, as kube's second round does. Its time and
// outcome go to kube's apiserver_admission_step_admission_duration_seconds (type "admit").
func (c *Chain) Admit(ctx context.Context, a admission.Attributes) (runtime.Object, error) {
	start := time.Now()
	obj, err := c.admit(ctx, a)
	admissionmetrics.Metrics.ObserveAdmissionStep(ctx, time.Since(start), err != nil, a, "admit")
	return obj, err
}

func (c *Chain) admit(ctx context.Context, a admission.Attributes) (runtime.Object, error) {
	for _, m := range c.Mutating {
		if err := m.Admit(ctx, a); err != nil {
			return nil, err
		}
	}
	obj, mutated := a.GetObject(), false
	if c.MutatingPolicies != nil {
		start := time.Now()
		var err error
		obj, mutated, err = c.MutatingPolicies.Admit(ctx, a, false)
		observe(ctx, start, err, a, "admit", plugins.MutatingAdmissionPolicy)
		if err != nil {
			return nil, err
		}
		if mutated {
			setObject(a, obj)
		}
	}
	if c.MutatingWebhooks == nil {
		return obj, nil
	}
	before := obj
	start := time.Now()
	obj, err := c.MutatingWebhooks.Admit(ctx, a)
	observe(ctx, start, err, a, "admit", plugins.MutatingAdmissionWebhook)
	if err != nil {
		return nil, err
	}
	if !mutated || obj == nil || apiequality.Semantic.DeepEqual(before, obj) {
		return obj, nil
	}
	setObject(a, obj)
	obj, _, err = c.MutatingPolicies.Admit(ctx, a, true)
	return obj, err
}

// setObject makes obj the object later admission sees, in place, as kube's policy
// dispatcher converts its result into the request's object.
func setObject(a admission.Attributes, obj runtime.Object) {
	current := a.GetObject()
	if current == nil || current == obj {
		return
	}
	dst, src := reflect.ValueOf(current), reflect.ValueOf(obj)
	if dst.Type() == src.Type() && dst.Kind() == reflect.Pointer {
		dst.Elem().Set(src.Elem())
	}
}

// Validate runs validating admission, observed as kube's "validate" admission step.
func (c *Chain) Validate(ctx context.Context, a admission.Attributes) error {
	start := time.Now()
	err := c.validate(ctx, a)
	admissionmetrics.Metrics.ObserveAdmissionStep(ctx, time.Since(start), err != nil, a, "validate")
	return err
}

func (c *Chain) validate(ctx context.Context, a admission.Attributes) error {
	for _, v := range c.Validating {
		if err := v.Validate(ctx, a); err != nil {
			return err
		}
	}
	if c.Policies != nil {
		start := time.Now()
		err := c.Policies.Validate(ctx, a)
		observe(ctx, start, err, a, "validate", plugins.ValidatingAdmissionPolicy)
		if err != nil {
			return err
		}
	}
	if c.ValidatingWebhooks != nil {
		start := time.Now()
		err := c.ValidatingWebhooks.Validate(ctx, a)
		observe(ctx, start, err, a, "validate", plugins.ValidatingAdmissionWebhook)
		if err != nil {
			return err
		}
	}
	if c.ResourceQuota == nil {
		return nil
	}
	start := time.Now()
	err := c.ResourceQuota.Validate(ctx, a)
	observe(ctx, start, err, a, "validate", plugins.ResourceQuota)
	return err
}

// installPodPlugins adds the enabled built-in plugins that concern pods and their volumes, in
// kube's order.
func installPodPlugins(chain *Chain, local *registry.Client, on func(string) bool) error {
	limits, prio := limitranger.New(local), priority.New(local)
	for _, m := range []struct {
		name string
		m    Mutator
	}{{plugins.LimitRanger, limits}, {plugins.ServiceAccount, serviceaccount.New(local)}, {plugins.Priority, prio},
		{plugins.DefaultTolerationSeconds, defaults.DefaultTolerationSeconds{}}} {
		if on(m.name) {
			chain.Mutating = append(chain.Mutating, namedMutator{m.name, m.m})
		}
	}
	if on(plugins.DefaultStorageClass) {
		chain.Mutating = append(chain.Mutating, namedMutator{plugins.DefaultStorageClass, defaults.NewDefaultClasses(local, true, false)})
	}
	if on(plugins.DefaultIngressClass) {
		chain.Mutating = append(chain.Mutating, namedMutator{plugins.DefaultIngressClass, defaults.NewDefaultClasses(local, false, true)})
	}
	if on(plugins.StorageObjectInUseProtection) {
		chain.Mutating = append(chain.Mutating, namedMutator{plugins.StorageObjectInUseProtection, defaults.StorageObjectInUseProtection{}})
	}
	if on(plugins.Priority) {
		chain.Validating = append(chain.Validating, namedValidator{plugins.Priority, prio})
	}
	if on(plugins.LimitRanger) {
		chain.Validating = append(chain.Validating, namedValidator{plugins.LimitRanger, limits})
	}
	if on(plugins.PodSecurity) {
		podSecurity, err := podsecurity.New(local)
		if err != nil {
			return err
		}
		chain.Validating = append(chain.Validating, namedValidator{plugins.PodSecurity, podSecurity})
	}
	return nil
}

// webhooksCheck names the webhooks that keep failing in /readyz?verbose. It always passes: an
// endpoint outside apichain being down is no reason to take a replica out of rotation (each
// request gets its webhook's failurePolicy answer), but it is the first question when
// requests fail or slow down.
type webhooksCheck struct{ w *webhook.Webhooks }

func (webhooksCheck) Name() string              { return "admission-webhooks" }
func (webhooksCheck) Check(*http.Request) error { return nil }
func (c webhooksCheck) Note() string {
	failing := c.w.Failing()
	if len(failing) == 0 {
		return "no webhook failing"
	}
	parts := make([]string, len(failing))
	for i, f := range failing {
		state := "called"
		if f.Open {
			state = "not called for now"
		}
		last := f.LastError
		if len(last) > 160 {
			last = strings.ToValidUTF8(last[:160], "") + "…"
		}
		parts[i] = fmt.Sprintf("%s %s: %d failed calls in a row, %s, last: %s", f.Configuration, f.Name, f.Failures, state, last)
	}
	return "failing: " + strings.Join(parts, "; ")
}

// Install gives h's writes admission, with the admission configuration and namespaces read
// from config (h's own client in core, which owns them; a copy of core's in the other
// services) and policy params through params. The enabled plugins (the backend's
// --enable-admission-plugins and --disable-admission-plugins) that need pods or resource quotas
// are installed where h serves them. The backend is not ready before the configuration was
// read once, so no replica admits a request without what applies to it.
func Install(b *backend.Backend, h *registry.Handler, config registry.Source, params ...*registry.Client) error {
	on := b.AdmissionPlugins().Enabled
	w, err := webhook.NewWebhooks(Namespaces(config), b.Log, b.Tracer().Active())
	if err != nil {
		return err
	}
	p := policy.NewPolicies(Namespaces(config), b.Log, params...)
	mp := policy.NewMutatingPolicies(p)
	chain := &Chain{}
	if on(plugins.NamespaceLifecycle) {
		chain.Mutating = append(chain.Mutating, namedMutator{plugins.NamespaceLifecycle, namespacelifecycle.New(config)})
	}
	if on(plugins.MutatingAdmissionPolicy) {
		chain.MutatingPolicies = mp
	}
	if on(plugins.MutatingAdmissionWebhook) {
		chain.MutatingWebhooks = w
	}
	if on(plugins.ValidatingAdmissionPolicy) {
		chain.Policies = p
	}
	if on(plugins.ValidatingAdmissionWebhook) {
		chain.ValidatingWebhooks = w
	}
	local := registry.NewClient(h)
	if _, ok := local.Lookup(corev1.SchemeGroupVersion.WithResource("resourcequotas")); ok && on(plugins.ResourceQuota) {
		chain.ResourceQuota = resourcequota.New(local, b.Stopping())
	}
	if _, ok := local.Lookup(corev1.SchemeGroupVersion.WithResource("pods")); ok {
		if err := installPodPlugins(chain, local, on); err != nil {
			return err
		}
	}
	h.SetAdmission(chain)
	w.OnFailingChange(func() { b.SetFailingWebhooks(w.Failing()) })
	b.Server.AddReadyzChecks(webhooksCheck{w})
	return b.Server.AddPostStartHook("admission-configuration-synced", func(ctx context.Context) error {
		var wg sync.WaitGroup
		wg.Add(3)
		if err := watchConfiguration(ctx, config, b.Log, []string{"mutatingwebhookconfigurations", "validatingwebhookconfigurations"},
			func(l [][]runtime.Object) {
				w.SetConfigurations(typed[*admissionregistrationv1.MutatingWebhookConfiguration](l[0]),
					typed[*admissionregistrationv1.ValidatingWebhookConfiguration](l[1]))
			}, wg.Done); err != nil {
			return err
		}
		if err := watchConfiguration(ctx, config, b.Log, []string{"validatingadmissionpolicies", "validatingadmissionpolicybindings"},
			func(l [][]runtime.Object) {
				p.SetPolicies(typed[*admissionregistrationv1.ValidatingAdmissionPolicy](l[0]),
					typed[*admissionregistrationv1.ValidatingAdmissionPolicyBinding](l[1]))
			}, wg.Done); err != nil {
			return err
		}
		if err := watchConfiguration(ctx, config, b.Log, []string{"mutatingadmissionpolicies", "mutatingadmissionpolicybindings"},
			func(l [][]runtime.Object) {
				mp.SetPolicies(typed[*admissionregistrationv1.MutatingAdmissionPolicy](l[0]),
					typed[*admissionregistrationv1.MutatingAdmissionPolicyBinding](l[1]))
			}, wg.Done); err != nil {
			return err
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
}
