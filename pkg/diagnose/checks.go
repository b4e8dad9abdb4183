package diagnose

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	lifecyclev1 "github.com/apichain/apichain/gen/apichain/lifecycle/v1"
	"github.com/apichain/apichain/pkg/apiregistration"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/client-go/rest"
)

// readiness: the gateway's /readyz, which gathers every service and instance.
func (d *diagnosis) readiness() {
	const check = "readiness"
	code, body, err := d.get("/readyz?verbose")
	if err != nil {
		d.unreadable(check, "/readyz", err.Error())
		return
	}
	var failing []string
	for line := range strings.Lines(string(body)) {
		if name, ok := strings.CutPrefix(line, "[-]"); ok {
			failing = append(failing, strings.Fields(name)[0])
		}
	}
	if code == http.StatusOK {
		d.add(Finding{Check: check, Verdict: OK, Message: "/readyz is ok"})
		return
	}
	if len(failing) == 0 {
		d.add(Finding{Check: check, Verdict: Failed, Message: fmt.Sprintf("/readyz answers HTTP %d: %s", code, truncate(string(body), 200)),
			Cause: "the gateway is not serving, or is shutting down", Fix: "the gateway's log"})
		return
	}
	d.add(Finding{Check: check, Verdict: Failed, Message: "/readyz fails: " + strings.Join(failing, ", "),
		Cause: "the findings below say which instance, hook or check holds it back",
		Fix:   "fix those; /readyz?verbose and /debug/startup?format=html show the same live"})
}

// lifecycle: where the gateway learns the instances' states (NATS, or the gRPC fallback).
func (d *diagnosis) lifecycle() {
	st := d.lifecycleStates()
	if st == nil {
		return
	}
	if st.GetSource() != "nats" {
		d.add(Finding{Check: "lifecycle", Verdict: Warning, Message: fmt.Sprintf("instance states come from %q, not NATS", st.GetSource()),
			Cause: "the gateway cannot reach NATS, so it polls each backend's grpc.health.v1 instead: hook timings and failing webhooks are not published",
			Fix:   "NATS's health and the gateway's --nats-url and credentials; the gateway logs its NATS connection"})
		return
	}
	d.add(Finding{Check: "lifecycle", Verdict: OK, Message: "instance states arrive over NATS"})
}

// instances: every service has a ready instance; each instance's time from start to ready.
func (d *diagnosis) instances() {
	st := d.lifecycleStates()
	if st == nil {
		return
	}
	byService := map[string][]*lifecyclev1.InstanceState{}
	for _, s := range st.GetStates() {
		byService[s.GetService()] = append(byService[s.GetService()], s)
	}
	for _, svc := range []string{"gateway", "aggregator", "core", "extensions"} {
		if len(byService[svc]) == 0 {
			d.add(Finding{Check: "instances", Verdict: Failed, Subject: svc, Message: svc + " has no instance",
				Cause: "no instance of it started, or none can publish its state",
				Fix:   "start it (docker compose ps; its log), and check it reaches NATS"})
		}
	}
	services := make([]string, 0, len(byService))
	for svc := range byService {
		services = append(services, svc)
	}
	sort.Strings(services)
	for _, svc := range services {
		insts := byService[svc]
		ready := 0
		for _, s := range insts {
			if s.GetReady() && s.GetState() == lifecyclev1.State_STATE_RUNNING {
				ready++
			}
		}
		if ready == 0 {
			d.add(Finding{Check: "instances", Verdict: Failed, Subject: svc, Message: fmt.Sprintf("%s has no ready instance (0 of %d)", svc, len(insts)),
				Cause: "every request it serves fails with 503", Fix: "the hooks and checks of its instances below"})
		}
		for _, s := range insts {
			d.instance(s)
		}
	}
}

// instance is one instance's state and how long it took to become ready.
func (d *diagnosis) instance(s *lifecyclev1.InstanceState) {
	name := instanceName(s)
	started := s.GetStartedAt().AsTime()
	switch {
	case s.GetState() >= lifecyclev1.State_STATE_STOPPING:
		d.add(Finding{Check: "instances", Verdict: Warning, Subject: name, Message: name + " is " + stateName(s.GetState()),
			Cause: "it is shutting down or has stopped; requests go to the other instances",
			Fix:   "expected during a rolling restart; otherwise its log says why it stopped"})
	case !s.GetReady():
		var failing []string
		for _, c := range s.GetChecks() {
			if !c.GetOk() {
				failing = append(failing, c.GetName())
			}
		}
		d.add(Finding{Check: "instances", Verdict: Failed, Subject: name,
			Message: fmt.Sprintf("%s not ready after %s (failing: %s)", name, time.Since(started).Round(time.Second), strings.Join(failing, ", ")),
			Cause:   "a post-start hook has not finished or a check fails (see hooks and etcd below)",
			Fix:     "the instance's log; /readyz?verbose"})
	default:
		msg := name + " ready"
		if at, ok := readyAt(s); ok {
			msg = fmt.Sprintf("%s ready %s after start (serving since %s)", name, at.Sub(started).Round(time.Millisecond), at.Format(time.RFC3339))
		}
		d.add(Finding{Check: "instances", Verdict: OK, Subject: name, Message: msg})
	}
}

// readyAt is when an instance reached RUNNING (became ready and serving).
func readyAt(s *lifecyclev1.InstanceState) (time.Time, bool) {
	for _, t := range s.GetTransitions() {
		if t.GetState() == lifecyclev1.State_STATE_RUNNING {
			return t.GetAt().AsTime(), true
		}
	}
	return time.Time{}, false
}

func stateName(s lifecyclev1.State) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "STATE_"))
}

// cacheHooks are the hooks that wait for informers and watch caches to sync.
func cacheHook(name string) bool {
	return strings.HasSuffix(name, "-synced") || name == "start-watch-cache"
}

// hooks: post-start hooks not finished, failed, or slow; the slowest of each instance.
func (d *diagnosis) hooks() {
	d.hookDurations("post-start hooks", func(name string) bool { return !cacheHook(name) })
}

// caches: the hooks that wait for informers and watch caches.
func (d *diagnosis) caches() { d.hookDurations("cache sync", cacheHook) }

func (d *diagnosis) hookDurations(check string, which func(string) bool) {
	st := d.lifecycleStates()
	if st == nil {
		return
	}
	for _, s := range st.GetStates() {
		name := instanceName(s)
		var slowest string
		var slowestDur time.Duration
		problems := false
		for _, h := range s.GetHooks() {
			if !which(h.GetName()) {
				continue
			}
			subject := name + " " + h.GetName()
			switch {
			case h.GetError() != "":
				problems = true
				d.add(Finding{Check: check, Verdict: Failed, Subject: subject, Message: fmt.Sprintf("hook %s failed on %s: %s", h.GetName(), name, h.GetError()),
					Cause: "the instance never becomes ready", Fix: "the instance's log around the hook's error; restart it once fixed"})
			case h.GetFinishedAt() == nil:
				problems = true
				d.add(Finding{Check: check, Verdict: Failed, Subject: subject,
					Message: fmt.Sprintf("hook %s on %s still running after %s", h.GetName(), name, time.Since(h.GetStartedAt().AsTime()).Round(time.Second)),
					Cause:   hookCause(h.GetName()), Fix: "the instance's log for the hook; /debug/startup?format=html shows what it waits behind"})
			default:
				dur := h.GetFinishedAt().AsTime().Sub(h.GetStartedAt().AsTime())
				if dur > slowestDur {
					slowest, slowestDur = h.GetName(), dur
				}
				if dur > d.th.SlowHook {
					problems = true
					d.add(Finding{Check: check, Verdict: Warning, Subject: subject,
						Message: fmt.Sprintf("hook %s on %s took %s (more than %s)", h.GetName(), name, dur.Round(time.Millisecond), d.th.SlowHook),
						Cause:   hookCause(h.GetName()), Fix: "the instance's log for the hook; /debug/startup?format=html"})
				}
			}
		}
		if !problems && slowest != "" {
			d.add(Finding{Check: check, Verdict: OK, Subject: name, Message: fmt.Sprintf("%s: slowest %s, %s", name, slowest, slowestDur.Round(time.Millisecond))})
		}
	}
}

// hookCause is what usually makes a hook slow.
func hookCause(hook string) string {
	switch {
	case hook == "storage-readiness" || hook == "start-watch-cache":
		return "etcd slow or unreachable from this instance"
	case strings.HasSuffix(hook, "-informers-synced"):
		return "the service whose kinds it copies (core) is not ready, or its watch is slow"
	case strings.HasPrefix(hook, "apiservice-"):
		return "an aggregated API server slow to answer"
	case hook == "admission-configuration-synced":
		return "core not serving the webhook and policy configurations yet"
	}
	return "the hook's own work, or what it waits for"
}

// etcd: each backend's "etcd" check, and the round trip it measured.
func (d *diagnosis) etcd() {
	st := d.lifecycleStates()
	if st == nil {
		return
	}
	for _, s := range st.GetStates() {
		for _, c := range s.GetChecks() {
			if c.GetName() != "etcd" {
				continue
			}
			name := instanceName(s)
			if !c.GetOk() {
				d.add(Finding{Check: "etcd", Verdict: Failed, Subject: name, Message: fmt.Sprintf("%s cannot reach etcd: %s", name, c.GetError()),
					Cause: "etcd is down, has no leader, or this backend's --etcd-servers or etcd client certificate is wrong",
					Fix:   "etcd's health (etcdctl endpoint health with the client certificate), then the backend's etcd flags"})
				continue
			}
			rtt, ok := parseRoundTrip(c.GetNote())
			switch {
			case ok && rtt > d.th.SlowEtcd:
				d.add(Finding{Check: "etcd", Verdict: Warning, Subject: name, Message: fmt.Sprintf("etcd answers %s in %s (more than %s)", name, rtt, d.th.SlowEtcd),
					Cause: "a slow disk under etcd (fsync), a busy etcd, or a slow network to it",
					Fix:   "etcd's disk (etcd_disk_wal_fsync_duration_seconds) and load; etcd_request_duration_seconds by resource"})
			case ok:
				d.add(Finding{Check: "etcd", Verdict: OK, Subject: name, Message: fmt.Sprintf("etcd answers %s in %s", name, rtt)})
			default:
				d.add(Finding{Check: "etcd", Verdict: OK, Subject: name, Message: "etcd answers " + name})
			}
		}
	}
}

// parseRoundTrip reads the etcd check's note ("round trip 1.2ms").
func parseRoundTrip(note string) (time.Duration, bool) {
	s, ok := strings.CutPrefix(note, "round trip ")
	if !ok {
		return 0, false
	}
	d, err := time.ParseDuration(s)
	return d, err == nil
}

// webhooks: webhooks that fail, are paused, or could stall writes (failurePolicy Fail with a
// long timeout).
func (d *diagnosis) webhooks() {
	const check = "admission webhooks"
	var mutating admissionregistrationv1.MutatingWebhookConfigurationList
	var validating admissionregistrationv1.ValidatingWebhookConfigurationList
	if !d.getJSON(check, "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", &mutating) ||
		!d.getJSON(check, "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", &validating) {
		return
	}
	type hook struct {
		kind, configuration, name string
		policy                    admissionregistrationv1.FailurePolicyType
		timeout                   time.Duration
	}
	var hooks []hook
	add := func(kind, cfg, name string, fp *admissionregistrationv1.FailurePolicyType, timeout *int32) {
		h := hook{kind: kind, configuration: cfg, name: name, policy: admissionregistrationv1.Fail, timeout: 10 * time.Second}
		if fp != nil {
			h.policy = *fp
		}
		if timeout != nil {
			h.timeout = time.Duration(*timeout) * time.Second
		}
		hooks = append(hooks, h)
	}
	for _, c := range mutating.Items {
		for _, w := range c.Webhooks {
			add("mutating", c.Name, w.Name, w.FailurePolicy, w.TimeoutSeconds)
		}
	}
	for _, c := range validating.Items {
		for _, w := range c.Webhooks {
			add("validating", c.Name, w.Name, w.FailurePolicy, w.TimeoutSeconds)
		}
	}
	// Failing webhooks as each backend instance publishes them.
	type failing struct {
		instances []string
		last      string
		open      bool
	}
	fails := map[string]*failing{}
	if st := d.lifecycleStates(); st != nil {
		for _, s := range st.GetStates() {
			for _, f := range s.GetFailingWebhooks() {
				key := f.GetConfiguration() + "/" + f.GetName()
				if fails[key] == nil {
					fails[key] = &failing{}
				}
				fails[key].instances = append(fails[key].instances, instanceName(s))
				fails[key].last = f.GetLastError()
				fails[key].open = fails[key].open || f.GetOpen()
			}
		}
	}
	for _, h := range hooks {
		subject := fmt.Sprintf("%s webhook %s (configuration %s)", h.kind, h.name, h.configuration)
		// Backends name a webhook's configuration with its kind.
		f := fails[strings.ToUpper(h.kind[:1])+h.kind[1:]+"WebhookConfiguration/"+h.configuration+"/"+h.name]
		switch {
		case f != nil:
			v, cause := Warning, "requests it matches are let through without it (failurePolicy Ignore)"
			fix := "make its service reachable, fix it, or delete its configuration (kubectl delete " + h.kind + "webhookconfiguration " + h.configuration + ")"
			if h.policy == admissionregistrationv1.Fail {
				v, cause = Failed, fmt.Sprintf("every write it matches fails, after waiting up to %s (failurePolicy Fail, timeoutSeconds %d)", h.timeout, int(h.timeout.Seconds()))
				if h.timeout > d.th.WebhookTimeout {
					fix += fmt.Sprintf("; and set timeoutSeconds to %d or less, so that while it is down writes fail fast", int(d.th.WebhookTimeout.Seconds()))
				}
			}
			state := "failing"
			if f.open {
				state = "failing and paused (not called for now)"
			}
			d.add(Finding{Check: check, Verdict: v, Subject: subject,
				Message: fmt.Sprintf("%s is %s on %s: %s", subject, state, strings.Join(f.instances, ", "), truncate(f.last, 240)),
				Cause:   cause, Fix: fix})
		case h.policy == admissionregistrationv1.Fail && h.timeout > d.th.WebhookTimeout:
			d.add(Finding{Check: check, Verdict: Warning, Subject: subject,
				Message: fmt.Sprintf("%s has failurePolicy Fail and timeoutSeconds %d", subject, int(h.timeout.Seconds())),
				Cause:   fmt.Sprintf("if it stops answering, every write it matches waits %s and then fails", h.timeout),
				Fix:     fmt.Sprintf("set timeoutSeconds to %d or less, or failurePolicy Ignore if the cluster can do without it", int(d.th.WebhookTimeout.Seconds()))})
		default:
			d.add(Finding{Check: check, Verdict: OK, Subject: subject, Message: subject + " answers"})
		}
	}
	if len(hooks) == 0 {
		d.add(Finding{Check: check, Verdict: OK, Message: "no admission webhook configured"})
	}
	d.slowWebhooks(check)
}

// slowWebhooks reads the webhooks' latency from the gateway's metrics (the all-in-one's include
// its backends'; in compose they are on each backend's metrics port).
func (d *diagnosis) slowWebhooks(check string) {
	fams := d.metricFamilies()
	mf := fams["apiserver_admission_webhook_admission_duration_seconds"]
	if mf == nil {
		return
	}
	type agg struct{ sum, count float64 }
	by := map[string]*agg{}
	for _, m := range mf.GetMetric() {
		name := label(m.GetLabel(), "name")
		if by[name] == nil {
			by[name] = &agg{}
		}
		by[name].sum += m.GetHistogram().GetSampleSum()
		by[name].count += float64(m.GetHistogram().GetSampleCount())
	}
	for name, a := range by {
		if a.count == 0 {
			continue
		}
		if mean := time.Duration(a.sum / a.count * float64(time.Second)); mean > time.Second {
			d.add(Finding{Check: check, Verdict: Warning, Subject: "webhook " + name,
				Message: fmt.Sprintf("webhook %s takes %s on average (%d calls)", name, mean.Round(time.Millisecond), int(a.count)),
				Cause:   "every write it matches waits that long", Fix: "the webhook's own latency; narrow its rules or objectSelector"})
		}
	}
}

// apiServices: every APIService available, and its OpenAPI aggregated.
func (d *diagnosis) apiServices() {
	const check = "APIServices"
	var list apiregistration.APIServiceList
	if !d.getJSON(check, "/apis/apiregistration.k8s.io/v1/apiservices", &list) {
		return
	}
	var openapi struct {
		Paths map[string]any `json:"paths"`
	}
	openAPIRead := d.getJSON("OpenAPI", "/openapi/v3", &openapi)
	local := 0
	for _, a := range list.Items {
		if a.Spec.Service == nil {
			local++ // served by apichain itself
			continue
		}
		c := a.Status.AvailableCondition()
		svc := a.Spec.Service.Namespace + "/" + a.Spec.Service.Name
		if c == nil || c.Status != apiregistration.ConditionTrue {
			reason, msg := "no Available condition yet", ""
			if c != nil {
				reason, msg = c.Reason, c.Message
			}
			d.add(Finding{Check: check, Verdict: Failed, Subject: a.Name,
				Message: fmt.Sprintf("APIService %s (service %s) is not available: %s %s", a.Name, svc, reason, truncate(msg, 240)),
				Cause:   "its aggregated API server is down or unreachable: requests to " + a.Spec.Group + "/" + a.Spec.Version + " fail with 503 and discovery leaves it out",
				Fix:     "the Service " + svc + " and its endpoints (kubectl get endpointslices -n " + a.Spec.Service.Namespace + "); delete the APIService if the server is gone for good"})
			continue
		}
		path := "apis/" + a.Spec.Group + "/" + a.Spec.Version
		if openAPIRead {
			if _, ok := openapi.Paths[path]; !ok {
				d.add(Finding{Check: check, Verdict: Warning, Subject: a.Name, Message: fmt.Sprintf("APIService %s is available but /openapi/v3 has no %s", a.Name, path),
					Cause: "the aggregator has not fetched its OpenAPI yet, or the server does not serve /openapi/v3",
					Fix:   "the aggregator's log (apiservice-openapi-controller); kubectl explain needs it"})
				continue
			}
		}
		d.add(Finding{Check: check, Verdict: OK, Subject: a.Name, Message: "APIService " + a.Name + " is available"})
	}
	d.add(Finding{Check: check, Verdict: OK, Message: fmt.Sprintf("%d APIServices served by apichain itself", local)})
}

// priorityAndFairness: requests rejected with 429 since the gateway started.
func (d *diagnosis) priorityAndFairness() {
	fams := d.metricFamilies()
	if fams == nil {
		return
	}
	rejected := map[string]float64{}
	if mf := fams["apiserver_flowcontrol_rejected_requests_total"]; mf != nil {
		for _, m := range mf.GetMetric() {
			rejected[label(m.GetLabel(), "priority_level")+" ("+label(m.GetLabel(), "reason")+")"] += m.GetCounter().GetValue()
		}
	}
	keys := make([]string, 0, len(rejected))
	for k := range rejected {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		d.add(Finding{Check: "priority and fairness", Verdict: Warning, Subject: k,
			Message: fmt.Sprintf("priority level %s rejected %d requests with 429", k, int(rejected[k])),
			Cause:   "more requests than its seats and queues hold",
			Fix:     "/debug/api_priority_and_fairness/dump_priority_levels; its PriorityLevelConfiguration's shares, or more gateway replicas"})
	}
	if len(keys) == 0 {
		d.add(Finding{Check: "priority and fairness", Verdict: OK, Message: "no request rejected"})
	}
}

// metricFamilies reads this gateway's /metrics once (nil when unreadable).
func (d *diagnosis) metricFamilies() map[string]*metricFamily {
	if d.metricsRead {
		return d.metrics
	}
	d.metricsRead = true
	body, ok := d.read("metrics", "/metrics")
	if !ok {
		return nil
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	var err error
	if d.metrics, err = parser.TextToMetricFamilies(strings.NewReader(string(body))); err != nil {
		d.unreadable("metrics", "/metrics", err.Error())
	}
	return d.metrics
}

// certificate: the serving certificate the client sees, its names and expiry.
func (d *diagnosis) certificate() {
	const check = "serving certificate"
	u, err := url.Parse(d.base)
	if err != nil || u.Scheme != "https" {
		d.add(Finding{Check: check, Verdict: Warning, Message: "the server is not reached over https", Fix: "use the https URL"})
		return
	}
	tlsCfg, err := rest.TLSConfigFor(d.cfg)
	if err != nil || tlsCfg == nil {
		tlsCfg = &tls.Config{} //nolint:gosec // only to read the certificate
	}
	tlsCfg = tlsCfg.Clone()
	tlsCfg.InsecureSkipVerify = true //nolint:gosec // the certificate is read, not trusted: the client checks it on every request
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "443")
	}
	conn, err := (&tls.Dialer{NetDialer: &net.Dialer{Timeout: 10 * time.Second}, Config: tlsCfg}).DialContext(d.ctx, "tcp", host)
	if err != nil {
		d.add(Finding{Check: check, Verdict: Failed, Message: "TLS handshake failed: " + err.Error(), Fix: "the gateway's --tls-cert-file and --tls-private-key-file"})
		return
	}
	defer conn.Close()
	certs := conn.(*tls.Conn).ConnectionState().PeerCertificates
	if len(certs) == 0 {
		return
	}
	leaf := certs[0]
	names := slices.Clone(leaf.DNSNames)
	for _, ip := range leaf.IPAddresses {
		names = append(names, ip.String())
	}
	left := time.Until(leaf.NotAfter)
	msg := fmt.Sprintf("expires %s (in %s), names %s", leaf.NotAfter.Format(time.RFC3339), left.Round(time.Hour), strings.Join(names, ", "))
	switch {
	case left <= 0:
		d.add(Finding{Check: check, Verdict: Failed, Message: "expired: " + msg, Cause: "clients refuse the server", Fix: "issue a new one (apichain init-pki makes them) and restart the gateway"})
	case left < d.th.CertificateExpiry:
		d.add(Finding{Check: check, Verdict: Warning, Message: msg, Cause: "it expires soon", Fix: "issue a new one (apichain init-pki makes them) and restart the gateway"})
	case leaf.VerifyHostname(u.Hostname()) != nil:
		d.add(Finding{Check: check, Verdict: Warning, Message: msg, Cause: "it does not name " + u.Hostname() + ", the host the kubeconfig uses", Fix: "add the name to the certificate (--tls-sans) or use a name it has"})
	default:
		d.add(Finding{Check: check, Verdict: OK, Message: msg})
	}
}

type metricFamily = dto.MetricFamily

// label is a sample's label value.
func label(labels []*dto.LabelPair, name string) string {
	for _, l := range labels {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
