// Package webhook calls the admission webhooks the webhook configurations name (kube's
// MutatingAdmissionWebhook and ValidatingAdmissionWebhook), matched to each write and called as
// kube does; a breaker per webhook stops calling one whose calls keep failing for a short
// while, and Failing lists those.
package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apichain/apichain/pkg/admission/match"
	"github.com/apichain/apichain/pkg/registry"
	"go.opentelemetry.io/otel/attribute"
	oteltrace "go.opentelemetry.io/otel/trace"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	admissionv1beta1 "k8s.io/api/admission/v1beta1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	admissionmetrics "k8s.io/apiserver/pkg/admission/metrics"
	celplugin "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook"
	webhookerrors "k8s.io/apiserver/pkg/admission/plugin/webhook/errors"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/generic"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/object"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/rules"
	webhookrequest "k8s.io/apiserver/pkg/admission/plugin/webhook/request"
	"k8s.io/apiserver/pkg/cel/environment"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/tracing"
)

// Webhooks is kube's MutatingAdmissionWebhook and ValidatingAdmissionWebhook: the configured
// webhooks (Set from a watch of the configurations), matched to each write as kube matches
// them and called as kube calls them (failurePolicy, timeoutSeconds, sideEffects and dry-run,
// reinvocation, JSON patches, warnings). Beyond kube, a webhook whose calls keep failing is
// not called for a short while: its failurePolicy answers at once (see breaker).
type Webhooks struct {
	mutating, validating atomic.Pointer[[]webhook.WebhookAccessor]
	namespaces           match.NamespaceGetter
	clients              *webhookutil.ClientManager
	conditions           func() celplugin.ConditionCompiler // built at the first match condition: its CEL environments cost every start milliseconds
	log                  *slog.Logger
	breakers             breakers
}

// NewWebhooks returns webhook admission with no webhooks yet. With tp (tracing on), each call
// carries the request's trace context to the webhook and is traced, as kube-apiserver does.
func NewWebhooks(namespaces match.NamespaceGetter, log *slog.Logger, tp oteltrace.TracerProvider) (*Webhooks, error) {
	cm, err := webhookutil.NewClientManager(
		[]schema.GroupVersion{admissionv1beta1.SchemeGroupVersion, admissionv1.SchemeGroupVersion},
		admissionv1beta1.AddToScheme, admissionv1.AddToScheme)
	if err != nil {
		return nil, err
	}
	resolver, err := webhookutil.NewDefaultAuthenticationInfoResolver("")
	if err != nil {
		return nil, err
	}
	if tp != nil {
		resolver = tracedResolver{resolver, tp}
	}
	cm.SetAuthenticationInfoResolver(resolver)
	cm.SetServiceResolver(webhookutil.NewDefaultServiceResolver()) // <service>.<namespace>.svc
	if err := cm.Validate(); err != nil {
		return nil, err
	}
	w := &Webhooks{namespaces: namespaces, clients: &cm, log: log,
		conditions: sync.OnceValue(func() celplugin.ConditionCompiler {
			return celplugin.NewConditionCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
		})}
	w.breakers.init()
	w.mutating.Store(&[]webhook.WebhookAccessor{})
	w.validating.Store(&[]webhook.WebhookAccessor{})
	return w, nil
}

// SetConfigurations replaces the webhooks with those of the given configurations, in kube's
// order: configurations by name, webhooks in their configuration's order.
func (w *Webhooks) SetConfigurations(mutating []*admissionregistrationv1.MutatingWebhookConfiguration, validating []*admissionregistrationv1.ValidatingWebhookConfiguration) {
	sort.Slice(mutating, func(i, j int) bool { return mutating[i].Name < mutating[j].Name })
	sort.Slice(validating, func(i, j int) bool { return validating[i].Name < validating[j].Name })
	var m, v []webhook.WebhookAccessor
	for _, c := range mutating {
		names := map[string]int{}
		for i := range c.Webhooks {
			h := &c.Webhooks[i]
			n := names[h.Name]
			names[h.Name]++
			m = append(m, webhook.NewMutatingWebhookAccessor(fmt.Sprintf("%s/%s/%d", c.Name, h.Name, n), c.Name, h))
		}
	}
	for _, c := range validating {
		names := map[string]int{}
		for i := range c.Webhooks {
			h := &c.Webhooks[i]
			n := names[h.Name]
			names[h.Name]++
			v = append(v, webhook.NewValidatingWebhookAccessor(fmt.Sprintf("%s/%s/%d", c.Name, h.Name, n), c.Name, h))
		}
	}
	w.mutating.Store(&m)
	w.validating.Store(&v)
	w.breakers.keep(append(append([]webhook.WebhookAccessor{}, m...), v...))
}

// shouldCall returns how to call h for a, or nil when h does not apply (kube's ShouldCallHook
// for resources served in one version: selectors, rules, match conditions).
func (w *Webhooks) shouldCall(ctx context.Context, h webhook.WebhookAccessor, a *admission.VersionedAttributes) (*generic.WebhookInvocation, error) {
	nsMatches, nsErr := match.Namespace(ctx, w.namespaces, h, a)
	if !nsMatches && nsErr == nil {
		return nil, nil
	}
	objMatches, objErr := (&object.Matcher{}).MatchObjectSelector(h, a)
	if !objMatches && objErr == nil {
		return nil, nil
	}
	var inv *generic.WebhookInvocation
	for _, r := range h.GetRules() {
		if (&rules.Matcher{Rule: r, Attr: a}).Matches() {
			inv = &generic.WebhookInvocation{Webhook: h, Resource: a.GetResource(), Subresource: a.GetSubresource(), Kind: a.GetKind()}
			break
		}
	}
	if inv == nil {
		return nil, nil
	}
	if nsErr != nil {
		return nil, nsErr
	}
	if objErr != nil {
		return nil, objErr
	}
	if len(h.GetMatchConditions()) > 0 {
		res := h.GetCompiledMatcher(w.conditions()).Match(ctx, a, nil, nil)
		if res.Error != nil {
			return nil, apierrors.NewForbidden(a.GetResource().GroupResource(), a.GetName(), res.Error)
		}
		if !res.Matches {
			return nil, nil
		}
	}
	return inv, nil
}

// Admit runs the mutating webhooks in order, then once more those with reinvocationPolicy
// IfNeeded that ran before another webhook changed the object, as kube does.
func (w *Webhooks) Admit(ctx context.Context, a admission.Attributes) (runtime.Object, error) {
	hooks := *w.mutating.Load()
	if len(hooks) == 0 || match.Exempt(a) {
		return a.GetObject(), nil
	}
	va := match.Versioned(a)
	var invokedIfNeeded []string
	reinvoke := map[string]bool{}
	for round := 0; round < 2; round++ {
		if round == 1 && len(reinvoke) == 0 {
			break
		}
		for i, h := range hooks {
			inv, err := w.shouldCall(ctx, h, va)
			if err != nil {
				return nil, err
			}
			if inv == nil || (round == 1 && !reinvoke[h.GetUID()]) {
				continue
			}
			hook, _ := h.GetMutatingWebhook()
			start := time.Now()
			out, err := w.call(ctx, inv, va, true)
			observe(ctx, hook.Name, hook.FailurePolicy, start, err, va, stepMutating)
			changed := out != nil && !apiequality.Semantic.DeepEqual(va.VersionedObject.Object(), out)
			if out != nil {
				va.UpdateObject(out)
			}
			if err == nil {
				_ = va.AddAnnotation(fmt.Sprintf("mutation.webhook.admission.k8s.io/round_%d_index_%d", round, i),
					fmt.Sprintf(`{"configuration":%q,"webhook":%q,"mutated":%t}`, inv.Webhook.GetConfigurationName(), hook.Name, changed))
			}
			if round == 0 && changed {
				for _, uid := range invokedIfNeeded {
					reinvoke[uid] = true
				}
				invokedIfNeeded = nil
			}
			if round == 0 && hook.ReinvocationPolicy != nil && *hook.ReinvocationPolicy == admissionregistrationv1.IfNeededReinvocationPolicy {
				invokedIfNeeded = append(invokedIfNeeded, h.GetUID())
			}
			if err := w.outcome(ctx, hook.Name, hook.FailurePolicy, err, va, stepMutating, fmt.Sprintf("failed-open.mutation.webhook.admission.k8s.io/round_%d_index_%d", round, i)); err != nil {
				return nil, err
			}
		}
	}
	return va.VersionedObject.Object(), nil
}

// Validate calls the matching validating webhooks in parallel; the request fails with the
// first rejection or (failurePolicy Fail) call failure.
func (w *Webhooks) Validate(ctx context.Context, a admission.Attributes) error {
	hooks := *w.validating.Load()
	if len(hooks) == 0 || match.Exempt(a) {
		return nil
	}
	va := match.Versioned(a)
	var calls []*generic.WebhookInvocation
	for _, h := range hooks {
		inv, err := w.shouldCall(ctx, h, va)
		if err != nil {
			return err
		}
		if inv != nil {
			calls = append(calls, inv)
		}
	}
	if len(calls) == 0 {
		return nil
	}
	if ctx.Err() != nil {
		return apierrors.NewTimeoutError("request did not complete within requested timeout", 0)
	}
	errs := make(chan error, len(calls))
	var wg sync.WaitGroup
	for i, inv := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hook, _ := inv.Webhook.GetValidatingWebhook()
			start := time.Now()
			_, err := w.call(ctx, inv, va, false)
			observe(ctx, hook.Name, hook.FailurePolicy, start, err, va, stepValidating)
			if err := w.outcome(ctx, hook.Name, hook.FailurePolicy, err, va, stepValidating, fmt.Sprintf("failed-open.validating.webhook.admission.k8s.io/round_0_index_%d", i)); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs // the first, or nil
}

// outcome turns a webhook call's error into the request's: a call failure fails the request
// (failurePolicy Fail, a 500) or is ignored (Ignore, noted in the audit annotations); a
// rejection is the webhook's status.
func (w *Webhooks) outcome(ctx context.Context, name string, policy *admissionregistrationv1.FailurePolicyType, err error, a *admission.VersionedAttributes, step, failedOpenKey string) error {
	if err == nil {
		return nil
	}
	var callErr *webhookutil.ErrCallingWebhook
	if errors.As(err, &callErr) {
		if policy != nil && *policy == admissionregistrationv1.Ignore {
			if !errors.Is(callErr.Reason, context.Canceled) {
				w.log.Warn("webhook call failed, failing open", "webhook", name, "err", callErr)
				admissionmetrics.Metrics.ObserveWebhookFailOpen(ctx, name, step)
				_ = a.AddAnnotation(failedOpenKey, name)
			}
			if ctx.Err() != nil {
				return apierrors.NewTimeoutError("request did not complete within requested timeout", 0)
			}
			return nil
		}
		w.log.Warn("webhook call failed, failing closed", "webhook", name, "err", callErr)
		return apierrors.NewInternalError(err)
	}
	var rejection *webhookutil.ErrWebhookRejection
	if errors.As(err, &rejection) {
		return rejection.Status
	}
	return err
}

// call sends the AdmissionReview to the webhook and checks its answer: the patched object
// when a mutating webhook patched it, ErrWebhookRejection when denied, ErrCallingWebhook when
// the call or its answer failed.
func (w *Webhooks) call(ctx context.Context, inv *generic.WebhookInvocation, a *admission.VersionedAttributes, mutating bool) (runtime.Object, error) {
	h := inv.Webhook
	name := h.GetName()
	if a.IsDryRun() {
		se := h.GetSideEffects()
		if se == nil {
			return nil, &webhookutil.ErrCallingWebhook{WebhookName: name, Reason: fmt.Errorf("Webhook SideEffects is nil"), Status: apierrors.NewBadRequest("Webhook SideEffects is nil")}
		}
		if *se != admissionregistrationv1.SideEffectClassNone && *se != admissionregistrationv1.SideEffectClassNoneOnDryRun {
			return nil, webhookerrors.NewDryRunUnsupportedErr(name)
		}
	}
	if err := w.breakers.allow(h.GetUID()); err != nil {
		return nil, &webhookutil.ErrCallingWebhook{WebhookName: name, Reason: err, Status: apierrors.NewServiceUnavailable("error calling webhook")}
	}
	out, err := w.roundTrip(ctx, inv, a, mutating)
	var callErr *webhookutil.ErrCallingWebhook
	switch {
	case errors.As(err, &callErr) && !errors.Is(callErr.Reason, context.Canceled):
		w.breakers.record(h, callErr.Reason, w.log)
	case err == nil || errors.As(err, new(*webhookutil.ErrWebhookRejection)):
		w.breakers.record(h, nil, w.log)
	default: // canceled, or failed here: says nothing of the webhook
		w.breakers.release(h.GetUID())
	}
	return out, err
}

func (w *Webhooks) roundTrip(ctx context.Context, inv *generic.WebhookInvocation, a *admission.VersionedAttributes, mutating bool) (runtime.Object, error) {
	h := inv.Webhook
	name := h.GetName()
	uid, request, response, err := webhookrequest.CreateAdmissionObjects(a, inv)
	if err != nil {
		return nil, &webhookutil.ErrCallingWebhook{WebhookName: name, Reason: fmt.Errorf("could not create admission objects: %w", err), Status: apierrors.NewBadRequest("error creating admission objects")}
	}
	kind := "validating"
	if mutating {
		kind = "mutating"
	}
	// kube's span, a child of the request's: nothing is recorded when tracing is off.
	ctx, span := oteltrace.SpanFromContext(ctx).TracerProvider().Tracer("k8s.io/component-base/tracing").Start(ctx, "Call "+kind+" webhook",
		oteltrace.WithAttributes(attribute.String("configuration", h.GetConfigurationName()), attribute.String("webhook", name),
			attribute.Stringer("resource", a.GetResource()), attribute.String("subresource", a.GetSubresource()),
			attribute.String("operation", string(a.GetOperation())), attribute.String("UID", string(uid))))
	defer span.End()
	client, err := h.GetRESTClient(w.clients)
	if err != nil {
		return nil, &webhookutil.ErrCallingWebhook{WebhookName: name, Reason: fmt.Errorf("could not get REST client: %w", err), Status: apierrors.NewInternalError(err)}
	}
	if t := h.GetTimeoutSeconds(); t != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(*t)*time.Second)
		defer cancel()
	}
	req := client.Post().Body(request)
	if deadline, ok := ctx.Deadline(); ok {
		if timeout := time.Until(deadline); timeout > 0 {
			if truncated := timeout.Truncate(time.Second); truncated != timeout {
				timeout = truncated + time.Second // whole seconds, rounded up, as kube sends it
			}
			req.Timeout(timeout)
		}
	}
	if err := req.Do(ctx).Into(response); err != nil {
		status, ok := err.(*apierrors.StatusError)
		if !ok {
			status = apierrors.NewServiceUnavailable("error calling webhook")
		}
		return nil, &webhookutil.ErrCallingWebhook{WebhookName: name, Reason: fmt.Errorf("failed to call webhook: %w", err), Status: status}
	}
	result, err := webhookrequest.VerifyAdmissionResponse(uid, mutating, response)
	if err != nil {
		return nil, &webhookutil.ErrCallingWebhook{WebhookName: name, Reason: fmt.Errorf("received invalid webhook response: %w", err), Status: apierrors.NewServiceUnavailable("error validating webhook response")}
	}
	for k, v := range result.AuditAnnotations {
		_ = a.AddAnnotation(name+"/"+k, v)
	}
	registry.AddWarnings(ctx, result.Warnings...)
	if !result.Allowed {
		return nil, &webhookutil.ErrWebhookRejection{Status: webhookerrors.ToStatusErr(name, result.Result)}
	}
	if !mutating || len(result.Patch) == 0 {
		return nil, nil
	}
	patch, err := jsonpatch.DecodePatch(result.Patch)
	if err != nil {
		return nil, &webhookutil.ErrCallingWebhook{WebhookName: name, Reason: fmt.Errorf("received undecodable patch in webhook response: %w", err), Status: apierrors.NewServiceUnavailable("error decoding patch in webhook response")}
	}
	if len(patch) == 0 {
		return nil, nil
	}
	current := a.VersionedObject.Object()
	if current == nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("admission webhook %q attempted to modify the object, which is not supported for this operation", name))
	}
	if result.PatchType != admissionv1.PatchTypeJSONPatch {
		return nil, &webhookutil.ErrCallingWebhook{WebhookName: name, Reason: fmt.Errorf("unsupported patch type %q", result.PatchType), Status: webhookerrors.ToStatusErr(name, result.Result)}
	}
	doc, err := json.Marshal(current)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if doc, err = patch.Apply(doc); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	var out runtime.Object
	if _, ok := current.(*unstructured.Unstructured); ok {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(doc); err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		out = u
	} else {
		out = reflect.New(reflect.TypeOf(current).Elem()).Interface().(runtime.Object)
		if err := json.Unmarshal(doc, out); err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		out.GetObjectKind().SetGroupVersionKind(a.VersionedKind)
	}
	return out, nil
}

// tracedResolver gives every webhook client kube's tracing transport: a span per call, and the
// trace context in its headers.
type tracedResolver struct {
	webhookutil.AuthenticationInfoResolver
	tp oteltrace.TracerProvider
}

func (r tracedResolver) ClientConfigFor(hostPort string) (*rest.Config, error) {
	return r.traced(r.AuthenticationInfoResolver.ClientConfigFor(hostPort))
}

func (r tracedResolver) ClientConfigForService(name, namespace string, port int) (*rest.Config, error) {
	return r.traced(r.AuthenticationInfoResolver.ClientConfigForService(name, namespace, port))
}

func (r tracedResolver) traced(cfg *rest.Config, err error) (*rest.Config, error) {
	if err != nil {
		return nil, err
	}
	cfg.Wrap(tracing.WrapperFor(r.tp))
	return cfg, nil
}

// The admission step types kube's webhook metrics name.
const (
	stepMutating   = "admit"
	stepValidating = "validating"
)

// observe records a webhook call in kube's admission webhook metrics as kube's dispatchers
// do: its latency, whether it rejected the request and with which code, and each rejection by
// kind (the webhook's denial, a failed call under failurePolicy Fail, an internal error).
func observe(ctx context.Context, name string, policy *admissionregistrationv1.FailurePolicyType, start time.Time, err error, a *admission.VersionedAttributes, step string) {
	op := string(a.GetOperation())
	rejected, code := false, http.StatusOK
	var callErr *webhookutil.ErrCallingWebhook
	var rejection *webhookutil.ErrWebhookRejection
	switch {
	case err == nil:
	case errors.As(err, &callErr):
		code = 0
		if callErr.Status != nil {
			code = int(callErr.Status.ErrStatus.Code)
		}
		if policy == nil || *policy != admissionregistrationv1.Ignore {
			rejected = true
			if !errors.Is(callErr.Reason, context.Canceled) {
				admissionmetrics.Metrics.ObserveWebhookRejection(ctx, name, step, op, admissionmetrics.WebhookRejectionCallingWebhookError, code)
			}
		}
	case errors.As(err, &rejection):
		rejected, code = true, int(rejection.Status.ErrStatus.Code)
		admissionmetrics.Metrics.ObserveWebhookRejection(ctx, name, step, op, admissionmetrics.WebhookRejectionNoError, code)
	default:
		rejected, code = true, 0
		admissionmetrics.Metrics.ObserveWebhookRejection(ctx, name, step, op, admissionmetrics.WebhookRejectionAPIServerInternalError, 0)
	}
	admissionmetrics.Metrics.ObserveWebhook(ctx, name, time.Since(start), rejected, a.Attributes, step, code)
}
