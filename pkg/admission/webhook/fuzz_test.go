package webhook

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A webhook's answer is untrusted input: whatever it sends, the request ends with a kube
// Status (or goes through), never a panic. The body's "UID" is replaced by the request's.
func FuzzWebhookResponse(f *testing.F) {
	for _, seed := range []string{
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"UID","allowed":true}}`,
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"UID","allowed":false,"status":{"code":99,"message":"no"}}}`,
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"UID","allowed":true,"patchType":"JSONPatch","patch":"W3sib3AiOiJhZGQiLCJwYXRoIjoiL21ldGFkYXRhL2xhYmVscyIsInZhbHVlIjp7fX1d"}}`,
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"UID","allowed":true,"patchType":"JSONPatch","patch":"W3sib3AiOiJyZW1vdmUiLCJwYXRoIjoiLyJ9XQ=="}}`,
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"UID","allowed":true,"patchType":"JSONPatch","patch":"W3sib3AiOiJyZXBsYWNlIiwicGF0aCI6Ii9kYXRhIiwidmFsdWUiOjF9XQ=="}}`,
		`{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","response":{"uid":"UID","allowed":true}}`,
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"UID","allowed":true,"warnings":["` + "\x00\n" + `"]}}`,
		`{"response":null}`, `[]`, `null`, ``,
	} {
		f.Add([]byte(seed))
	}
	var body atomic.Pointer[[]byte]
	s := newHookServer(&testing.T{}, func(_ string, req *admissionv1.AdmissionRequest, _ []byte) (*admissionv1.AdmissionResponse, []byte) {
		b := *body.Load()
		out := make([]byte, 0, len(b))
		for i := 0; i < len(b); i++ { // UID → the request's uid
			if i+3 <= len(b) && string(b[i:i+3]) == "UID" {
				out = append(out, req.UID...)
				i += 2
				continue
			}
			out = append(out, b[i])
		}
		if len(out) == 0 {
			out = []byte{' '}
		}
		return nil, out
	})
	f.Cleanup(s.Close)
	w := newTestWebhooks(&testing.T{})
	var clock atomic.Int64 // an hour passes at every look: the breaker never stays open, each input is tried
	w.breakers.now = func() time.Time { return time.Unix(clock.Add(3600), 0) }
	w.SetConfigurations([]*admissionregistrationv1.MutatingWebhookConfiguration{{ObjectMeta: metav1.ObjectMeta{Name: "m"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{mutatingHook(s, "m.example.com", "/", admissionregistrationv1.NeverReinvocationPolicy)}}},
		[]*admissionregistrationv1.ValidatingWebhookConfiguration{{ObjectMeta: metav1.ObjectMeta{Name: "v"},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{validatingHook(s, "v.example.com", "/", admissionregistrationv1.Fail)}}})
	f.Fuzz(func(t *testing.T, data []byte) {
		body.Store(&data)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c1"}, Data: map[string]string{"a": "b"}}
		check := func(err error) {
			if err == nil {
				return
			}
			if _, ok := err.(apierrors.APIStatus); !ok {
				t.Fatalf("not a kube Status: %T %v", err, err)
			}
		}
		_, err := w.Admit(context.Background(), configMapCreate(cm, false))
		check(err)
		check(w.Validate(context.Background(), configMapCreate(cm, false)))
	})
}
