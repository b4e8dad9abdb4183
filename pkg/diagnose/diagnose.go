// Package diagnose runs kube-apiserver's startup troubleshooting checklist against a running
// apichain (all-in-one or compose, any number of replicas), from what the server exposes to a
// client: /readyz, the lifecycle and metrics endpoints, and the API. Each check gives a
// verdict, the likely cause and the fix.
//
// The checklist (an API server slow to become ready, clients failing): post-start hooks and
// how long each instance took to become ready; informer and watch cache sync; APIServices and
// their OpenAPI aggregation; etcd's health and latency from each backend; admission webhooks
// (failing, paused, slow, or able to stall writes: failurePolicy Fail with a long timeout);
// and when the server started serving. apichain adds what a split brings: services with no
// ready instance, NATS and the gRPC fallback, and its serving certificate.
package diagnose

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	lifecyclev1 "github.com/apichain/apichain/gen/apichain/lifecycle/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"k8s.io/client-go/rest"
)

// Verdict is a finding's outcome.
type Verdict string

// The verdicts: a warning or a failure makes the command exit non-zero.
const (
	OK      Verdict = "ok"
	Warning Verdict = "warning"
	Failed  Verdict = "failed"
)

// Finding is one check's result about one subject (an instance, hook, webhook, APIService).
type Finding struct {
	Check   string  `json:"check"`
	Verdict Verdict `json:"verdict"`
	Subject string  `json:"subject,omitempty"`
	Message string  `json:"message"`
	Cause   string  `json:"cause,omitempty"`
	Fix     string  `json:"fix,omitempty"`
}

// Report is every finding, in the checklist's order.
type Report struct {
	Server   string    `json:"server"`
	At       time.Time `json:"at"`
	Findings []Finding `json:"findings"`
}

// Healthy says no finding is a warning or a failure.
func (r *Report) Healthy() bool {
	for _, f := range r.Findings {
		if f.Verdict != OK {
			return false
		}
	}
	return true
}

// Thresholds are where a finding turns into a warning.
type Thresholds struct {
	// SlowHook is a post-start hook's (and a cache sync's) duration worth a warning.
	SlowHook time.Duration
	// SlowEtcd is an etcd round trip from a backend worth a warning.
	SlowEtcd time.Duration
	// WebhookTimeout is the longest timeoutSeconds of a failurePolicy Fail webhook that
	// passes: beyond it one dead webhook holds every matching write that long.
	WebhookTimeout time.Duration
	// CertificateExpiry is how close to its expiry the serving certificate warns.
	CertificateExpiry time.Duration
}

// DefaultThresholds are the command's defaults.
var DefaultThresholds = Thresholds{SlowHook: 5 * time.Second, SlowEtcd: 100 * time.Millisecond,
	WebhookTimeout: 5 * time.Second, CertificateExpiry: 30 * 24 * time.Hour}

// Run diagnoses the server cfg names.
func Run(ctx context.Context, cfg *rest.Config, th Thresholds) (*Report, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	d := &diagnosis{ctx: ctx, cfg: cfg, hc: hc, base: strings.TrimSuffix(cfg.Host, "/"), th: th,
		report: &Report{Server: cfg.Host, At: time.Now().UTC()}}
	// The server must answer at all before anything else means something.
	if _, _, err := d.get("/version"); err != nil {
		return nil, fmt.Errorf("the server does not answer: %w", err)
	}
	for _, check := range []func(){d.readiness, d.lifecycle, d.instances, d.hooks, d.caches, d.etcd,
		d.webhooks, d.apiServices, d.priorityAndFairness, d.certificate} {
		check()
	}
	return d.report, nil
}

type diagnosis struct {
	ctx    context.Context
	cfg    *rest.Config
	hc     *http.Client
	base   string
	th     Thresholds
	report *Report

	states      *lifecyclev1.ListInstanceStatesResponse // nil when unreadable
	metrics     map[string]*metricFamily                // the gateway's /metrics, nil when unreadable
	statesRead  bool
	metricsRead bool
}

func (d *diagnosis) add(f Finding) { d.report.Findings = append(d.report.Findings, f) }

// get reads path; a non-2xx answer is returned with its code and no error.
func (d *diagnosis) get(path string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(d.ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.base+path, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := d.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	return resp.StatusCode, body, err
}

// read reads path for check; when it cannot (an error, a non-200 answer) it says why as a
// finding of check and returns false.
func (d *diagnosis) read(check, path string) ([]byte, bool) {
	code, body, err := d.get(path)
	switch {
	case err != nil:
		d.unreadable(check, path, err.Error())
	case code != http.StatusOK:
		d.unreadable(check, path, fmt.Sprintf("HTTP %d: %s", code, truncate(string(body), 200)))
	default:
		return body, true
	}
	return nil, false
}

// getJSON reads path into out; it reports why not as a finding of check and says false.
func (d *diagnosis) getJSON(check, path string, out any) bool {
	body, ok := d.read(check, path)
	if !ok {
		return false
	}
	if err := json.Unmarshal(body, out); err != nil {
		d.unreadable(check, path, err.Error())
		return false
	}
	return true
}

// unreadable is a check that could not read what it needs: a warning naming the permission.
func (d *diagnosis) unreadable(check, path, why string) {
	d.add(Finding{Check: check, Verdict: Warning, Subject: path, Message: "could not read " + path + ": " + why,
		Cause: "the kubeconfig's user may lack the permission, or the endpoint is not served",
		Fix:   "run diagnose as a user allowed get on " + path + " (docs/troubleshooting.md lists the permissions)"})
}

// lifecycleStates reads every instance's published state, once.
func (d *diagnosis) lifecycleStates() *lifecyclev1.ListInstanceStatesResponse {
	if d.statesRead {
		return d.states
	}
	d.statesRead = true
	const path = "/debug/lifecycle/v1/instances"
	body, ok := d.read("lifecycle", path)
	if !ok {
		return nil
	}
	st := &lifecyclev1.ListInstanceStatesResponse{}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(body, st); err != nil {
		d.unreadable("lifecycle", path, err.Error())
		return nil
	}
	d.states = st
	return st
}

func truncate(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// instanceName is how findings name an instance.
func instanceName(st *lifecyclev1.InstanceState) string {
	return st.GetService() + "/" + st.GetInstanceId()
}
