package webhook

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apichain/apichain/pkg/admission/configuration"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/utils/ptr"
)

// hookServer answers AdmissionReviews with respond, counting calls by path.
type hookServer struct {
	*httptest.Server
	mu    sync.Mutex
	calls map[string]int
}

func newHookServer(t *testing.T, respond func(path string, req *admissionv1.AdmissionRequest, body []byte) (*admissionv1.AdmissionResponse, []byte)) *hookServer {
	s := &hookServer{calls: map[string]int{}}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var review admissionv1.AdmissionReview
		_ = json.Unmarshal(body, &review)
		s.mu.Lock()
		s.calls[r.URL.Path]++
		s.mu.Unlock()
		resp, raw := respond(r.URL.Path, review.Request, body)
		if raw != nil {
			_, _ = w.Write(raw)
			return
		}
		resp.UID = review.Request.UID
		review.Request, review.Response = nil, resp
		_ = json.NewEncoder(w).Encode(review)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *hookServer) count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[path]
}

func (s *hookServer) clientConfig(path string) admissionregistrationv1.WebhookClientConfig {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
	return admissionregistrationv1.WebhookClientConfig{URL: ptr.To(s.URL + path), CABundle: ca}
}

var allConfigMaps = []admissionregistrationv1.RuleWithOperations{{
	Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll},
	Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}}

func mutatingHook(s *hookServer, name, path string, reinvoke admissionregistrationv1.ReinvocationPolicyType) admissionregistrationv1.MutatingWebhook {
	h := admissionregistrationv1.MutatingWebhook{Name: name, ClientConfig: s.clientConfig(path), Rules: allConfigMaps,
		SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"},
		ReinvocationPolicy: ptr.To(reinvoke)}
	c := &admissionregistrationv1.MutatingWebhookConfiguration{Webhooks: []admissionregistrationv1.MutatingWebhook{h}}
	configuration.MutatingWebhookConfigurations().Default(c)
	return c.Webhooks[0]
}

func validatingHook(s *hookServer, name, path string, policy admissionregistrationv1.FailurePolicyType) admissionregistrationv1.ValidatingWebhook {
	c := &admissionregistrationv1.ValidatingWebhookConfiguration{Webhooks: []admissionregistrationv1.ValidatingWebhook{{
		Name: name, ClientConfig: s.clientConfig(path), Rules: allConfigMaps, FailurePolicy: ptr.To(policy),
		SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"}}}}
	configuration.ValidatingWebhookConfigurations().Default(c)
	return c.Webhooks[0]
}

func newTestWebhooks(t *testing.T) *Webhooks {
	t.Helper()
	w, err := NewWebhooks(func(ctx context.Context, name string) (*corev1.Namespace, error) {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, nil
	}, slog.New(slog.DiscardHandler), nil)
	require.NoError(t, err)
	return w
}

func configMapCreate(cm *corev1.ConfigMap, dryRun bool) admission.Attributes {
	cm.APIVersion, cm.Kind = "v1", "ConfigMap"
	return admission.NewAttributesRecord(cm, nil, corev1.SchemeGroupVersion.WithKind("ConfigMap"), "ns", cm.Name,
		corev1.SchemeGroupVersion.WithResource("configmaps"), "", admission.Create, &metav1.CreateOptions{}, dryRun,
		&user.DefaultInfo{Name: "alice"})
}

func labelPatch(key string) *admissionv1.AdmissionResponse {
	pt := admissionv1.PatchTypeJSONPatch
	return &admissionv1.AdmissionResponse{Allowed: true, PatchType: &pt,
		Patch: []byte(`[{"op":"add","path":"/metadata/labels","value":{}},{"op":"add","path":"/metadata/labels/` + key + `","value":"x"}]`)}
}

// kube's reinvocation: a webhook with reinvocationPolicy IfNeeded runs again when a later
// webhook changed the object; one that changed nothing later does not make others run again.
func TestMutatingReinvocation(t *testing.T) {
	s := newHookServer(t, func(path string, req *admissionv1.AdmissionRequest, _ []byte) (*admissionv1.AdmissionResponse, []byte) {
		var cm corev1.ConfigMap
		_ = json.Unmarshal(req.Object.Raw, &cm)
		switch path {
		case "/first": // changes nothing, asks to be reinvoked
			return &admissionv1.AdmissionResponse{Allowed: true}, nil
		case "/second": // adds a label once
			if cm.Labels["second"] == "" {
				return labelPatch("second"), nil
			}
		}
		return &admissionv1.AdmissionResponse{Allowed: true}, nil
	})
	w := newTestWebhooks(t)
	w.SetConfigurations([]*admissionregistrationv1.MutatingWebhookConfiguration{{
		ObjectMeta: metav1.ObjectMeta{Name: "c"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{
			mutatingHook(s, "first.example.com", "/first", admissionregistrationv1.IfNeededReinvocationPolicy),
			mutatingHook(s, "second.example.com", "/second", admissionregistrationv1.NeverReinvocationPolicy),
			mutatingHook(s, "third.example.com", "/third", admissionregistrationv1.IfNeededReinvocationPolicy),
		}}}, nil)
	out, err := w.Admit(context.Background(), configMapCreate(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c1"}}, false))
	require.NoError(t, err)
	assert.Equal(t, "x", out.(*corev1.ConfigMap).Labels["second"], "the patch applies")
	assert.Equal(t, "ConfigMap", out.GetObjectKind().GroupVersionKind().Kind)
	assert.Equal(t, 2, s.count("/first"), "reinvoked: the second webhook changed the object after it ran")
	assert.Equal(t, 1, s.count("/second"), "Never")
	assert.Equal(t, 1, s.count("/third"), "nothing changed after it ran")
}

// Dry-run requests reach only webhooks without side effects (v1 allows no others to be
// created, so the check guards stored legacy configurations).
func TestDryRunAndSideEffects(t *testing.T) {
	s := newHookServer(t, func(string, *admissionv1.AdmissionRequest, []byte) (*admissionv1.AdmissionResponse, []byte) {
		return &admissionv1.AdmissionResponse{Allowed: true}, nil
	})
	w := newTestWebhooks(t)
	h := validatingHook(s, "some.example.com", "/", admissionregistrationv1.Fail)
	h.SideEffects = ptr.To(admissionregistrationv1.SideEffectClassSome)
	w.SetConfigurations(nil, []*admissionregistrationv1.ValidatingWebhookConfiguration{{ObjectMeta: metav1.ObjectMeta{Name: "c"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{h}}})
	err := w.Validate(context.Background(), configMapCreate(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c1"}}, true))
	require.Error(t, err)
	assert.True(t, apierrors.IsBadRequest(err))
	assert.Equal(t, `admission webhook "some.example.com" does not support dry run`, err.Error())
	assert.Zero(t, s.count("/"), "not called")
	// The same webhook with sideEffects None sees the dry run.
	h.SideEffects = ptr.To(admissionregistrationv1.SideEffectClassNone)
	w.SetConfigurations(nil, []*admissionregistrationv1.ValidatingWebhookConfiguration{{ObjectMeta: metav1.ObjectMeta{Name: "c"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{h}}})
	require.NoError(t, w.Validate(context.Background(), configMapCreate(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c1"}}, true)))
	assert.Equal(t, 1, s.count("/"))
}

// A webhook that keeps failing is not called for a while: its failurePolicy answers at once;
// after the cooldown one request probes it, and a success closes the breaker.
func TestBreaker(t *testing.T) {
	var broken sync.Map
	broken.Store("on", true)
	s := newHookServer(t, func(string, *admissionv1.AdmissionRequest, []byte) (*admissionv1.AdmissionResponse, []byte) {
		if v, _ := broken.Load("on"); v.(bool) {
			return nil, []byte("not json")
		}
		return &admissionv1.AdmissionResponse{Allowed: true}, nil
	})
	w := newTestWebhooks(t)
	now := time.Now()
	w.breakers.now = func() time.Time { return now }
	var changes atomic.Int32
	w.OnFailingChange(func() { changes.Add(1) })
	w.SetConfigurations(nil, []*admissionregistrationv1.ValidatingWebhookConfiguration{{ObjectMeta: metav1.ObjectMeta{Name: "c"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{validatingHook(s, "flaky.example.com", "/", admissionregistrationv1.Fail)}}})
	validate := func() error {
		return w.Validate(context.Background(), configMapCreate(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c1"}}, false))
	}
	for i := 0; i < breakerThreshold; i++ {
		err := validate()
		require.Error(t, err)
		assert.True(t, apierrors.IsInternalError(err))
		assert.Contains(t, err.Error(), `failed calling webhook "flaky.example.com": failed to call webhook: `)
	}
	assert.Equal(t, breakerThreshold, s.count("/"))
	failing := w.Failing()
	require.Len(t, failing, 1)
	assert.Equal(t, "flaky.example.com", failing[0].Name)
	assert.Equal(t, "ValidatingWebhookConfiguration/c", failing[0].Configuration)
	assert.EqualValues(t, breakerThreshold, failing[0].Failures)
	assert.True(t, failing[0].Open)
	assert.Contains(t, failing[0].LastError, "failed to call webhook: ")
	assert.EqualValues(t, breakerThreshold, changes.Load(), "each failure is news")
	err := validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `Internal error occurred: failed calling webhook "flaky.example.com": not called: 5 calls in a row failed, the last with: failed to call webhook: `)
	assert.Equal(t, breakerThreshold, s.count("/"), "failed fast")

	now = now.Add(breakerCooldown)
	broken.Store("on", false)
	require.NoError(t, validate(), "the probe succeeds")
	assert.Equal(t, breakerThreshold+1, s.count("/"))
	assert.Empty(t, w.Failing())
	assert.EqualValues(t, breakerThreshold+1, changes.Load(), "and so is the recovery")
	require.NoError(t, validate())
	assert.EqualValues(t, breakerThreshold+1, changes.Load(), "a success of a healthy webhook is not")
}

// failurePolicy Ignore lets the request through a failing webhook and records it in the
// audit annotations, as kube.
func TestIgnoreFailOpen(t *testing.T) {
	s := newHookServer(t, func(string, *admissionv1.AdmissionRequest, []byte) (*admissionv1.AdmissionResponse, []byte) {
		return nil, []byte("{")
	})
	w := newTestWebhooks(t)
	w.SetConfigurations(nil, []*admissionregistrationv1.ValidatingWebhookConfiguration{{ObjectMeta: metav1.ObjectMeta{Name: "c"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{validatingHook(s, "ignored.example.com", "/", admissionregistrationv1.Ignore)}}})
	a := &recorded{Attributes: configMapCreate(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c1"}}, false)}
	require.NoError(t, w.Validate(context.Background(), a))
	assert.Equal(t, map[string]string{"failed-open.validating.webhook.admission.k8s.io/round_0_index_0": "ignored.example.com"}, a.annotations)
}

// recorded keeps the audit annotations admission adds.
type recorded struct {
	admission.Attributes
	mu          sync.Mutex
	annotations map[string]string
}

func (r *recorded) AddAnnotation(k, v string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.annotations == nil {
		r.annotations = map[string]string{}
	}
	r.annotations[k] = v
	return nil
}
