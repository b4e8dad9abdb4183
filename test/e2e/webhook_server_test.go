package e2e

import (
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apichain/apichain/pkg/certs"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// webhookServer is a real HTTPS admission webhook on loopback, with a certificate from its
// own CA (the caBundle a configuration names), answering by path:
//
//	/deny             denies objects labelled deny=true ("label deny is set"), warns
//	/mutate           adds the label mutated=yes with a JSON patch, warns
//	/require-mutated  denies objects without mutated=yes ("not mutated first")
//	/allow            allows
//	/slow             answers after the caller gave up (or 20 s)
//	/malformed        answers with something that is not an AdmissionReview
//	/wrong-uid        answers for another request
//	/deny-code        denies with code 403, reason Forbidden and the message "no way"
//	/warn             allows with the warning "careful with <name>"
//	/bad-patch        allows with a JSON patch that cannot apply
//
// It keeps every AdmissionReview it received, by path.
type webhookServer struct {
	url      string
	caBundle string // base64, as in a configuration's YAML
	mu       sync.Mutex
	reviews  map[string][]admissionv1.AdmissionReview
	// traceparents are the W3C trace contexts the calls carried, by path.
	traceparents map[string][]string
}

func startWebhookServer(t testing.TB) *webhookServer {
	t.Helper()
	ca, err := certs.NewCA("webhook-test-ca", time.Hour)
	require.NoError(t, err)
	certPEM, keyPEM, err := ca.IssueServing("webhook", []string{"127.0.0.1"}, time.Hour)
	require.NoError(t, err)
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	require.NoError(t, err)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12})
	require.NoError(t, err)
	s := &webhookServer{url: "https://" + ln.Addr().String(), caBundle: base64.StdEncoding.EncodeToString(ca.CertPEM),
		reviews: map[string][]admissionv1.AdmissionReview{}, traceparents: map[string][]string{}}
	srv := &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

func (s *webhookServer) received(path string) []admissionv1.AdmissionReview {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]admissionv1.AdmissionReview(nil), s.reviews[path]...)
}

func (s *webhookServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
		http.Error(w, "bad review", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.reviews[r.URL.Path] = append(s.reviews[r.URL.Path], review)
	if tp := r.Header.Get("traceparent"); tp != "" {
		s.traceparents[r.URL.Path] = append(s.traceparents[r.URL.Path], tp)
	}
	s.mu.Unlock()
	var obj struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	_ = json.Unmarshal(review.Request.Object.Raw, &obj)
	resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
	switch r.URL.Path {
	case "/deny":
		resp.Warnings = []string{"deny webhook looked at " + review.Request.Name}
		if obj.Metadata.Labels["deny"] == "true" {
			resp.Allowed = false
			resp.Result = &metav1.Status{Message: "label deny is set"}
		}
	case "/mutate":
		patch := `[{"op":"add","path":"/metadata/labels/mutated","value":"yes"}]`
		if obj.Metadata.Labels == nil {
			patch = `[{"op":"add","path":"/metadata/labels","value":{"mutated":"yes"}}]`
		}
		pt := admissionv1.PatchTypeJSONPatch
		resp.Patch, resp.PatchType = []byte(patch), &pt
		resp.Warnings = []string{"mutated by the test webhook"}
	case "/require-mutated":
		if obj.Metadata.Labels["mutated"] != "yes" {
			resp.Allowed = false
			resp.Result = &metav1.Status{Message: "not mutated first", Code: http.StatusUnprocessableEntity}
		}
	case "/allow":
	case "/slow":
		select {
		case <-r.Context().Done():
		case <-time.After(20 * time.Second):
		}
	case "/malformed":
		_, _ = w.Write([]byte(`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","response":"no"`))
		return
	case "/wrong-uid":
		resp.UID = "not-" + review.Request.UID
	case "/deny-code":
		resp.Allowed = false
		resp.Result = &metav1.Status{Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden, Message: "no way"}
	case "/warn":
		resp.Warnings = []string{"careful with " + review.Request.Name}
	case "/bad-patch":
		pt := admissionv1.PatchTypeJSONPatch
		resp.Patch, resp.PatchType = []byte(`[{"op":"remove","path":"/spec/nope"}]`), &pt
	default:
		http.NotFound(w, r)
		return
	}
	review.Request, review.Response = nil, resp
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(review)
}

// deadURL is an https URL on loopback where nothing listens.
func (s *webhookServer) receivedTraceparents(path string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.traceparents[path]...)
}

func deadURL(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return "https://" + addr
}

// webhookYAML renders one webhook of a configuration (sideEffects None unless extra says).
func webhookYAML(name, url, caBundle, rules string, extra ...string) string {
	var b strings.Builder
	b.WriteString("- name: " + name + "\n")
	b.WriteString("  clientConfig: {url: \"" + url + "\", caBundle: " + caBundle + "}\n")
	b.WriteString("  rules: " + rules + "\n")
	sideEffects := "None"
	for _, e := range extra {
		if v, ok := strings.CutPrefix(e, "sideEffects: "); ok {
			sideEffects = v
			continue
		}
		b.WriteString("  " + e + "\n")
	}
	b.WriteString("  sideEffects: " + sideEffects + "\n  admissionReviewVersions: [v1]\n")
	return b.String()
}
