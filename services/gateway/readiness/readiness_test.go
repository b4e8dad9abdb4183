package readiness

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	lifecyclev1 "github.com/apichain/apichain/gen/apichain/lifecycle/v1"
	"github.com/apichain/apichain/pkg/healthz"
	"github.com/apichain/apichain/pkg/lifecycle"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/timestamppb"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func hook(name string, took time.Duration, finished bool) *lifecyclev1.Hook {
	h := &lifecyclev1.Hook{Name: name, StartedAt: timestamppb.New(t0)}
	if finished {
		h.FinishedAt = timestamppb.New(t0.Add(took))
	}
	return h
}

func okCheck(name string) *lifecyclev1.Check { return &lifecyclev1.Check{Name: name, Ok: true} }

func failCheck(name, err string) *lifecyclev1.Check {
	return &lifecyclev1.Check{Name: name, Error: err}
}

// renderedCheck is what a check renders to, for comparing whole lists.
type renderedCheck struct {
	Name string
	Err  string
	Note string
}

func render(checks []healthz.Checker) []renderedCheck {
	out := make([]renderedCheck, 0, len(checks))
	for _, c := range checks {
		r := renderedCheck{Name: c.Name()}
		if err := c.Check(nil); err != nil {
			r.Err = err.Error()
		}
		if n, ok := c.(healthz.Noter); ok {
			r.Note = n.Note()
		}
		out = append(out, r)
	}
	return out
}

// checksOf is RemoteChecks over a registry holding states, learned from source.
func checksOf(source lifecycle.Source, states ...*lifecyclev1.InstanceState) func() []healthz.Checker {
	reg := lifecycle.NewRegistry(time.Hour)
	reg.SetSource(source)
	for _, st := range states {
		reg.Upsert(st, source)
	}
	return func() []healthz.Checker { return RemoteChecks(reg) }
}

func clusterStates() []*lifecyclev1.InstanceState {
	return []*lifecyclev1.InstanceState{
		{Service: "core", InstanceId: "core-a", Ready: true,
			Hooks: []*lifecyclev1.Hook{hook("storage-readiness", 1500*time.Millisecond, true), hook("rbac-bootstrap", 250*time.Millisecond, true)},
			Checks: []*lifecyclev1.Check{okCheck("ping"), okCheck("etcd"), okCheck("poststarthook/storage-readiness"),
				okCheck("poststarthook/rbac-bootstrap"), okCheck("shutdown")}},
		{Service: "core", InstanceId: "core-b", Ready: false,
			Hooks: []*lifecyclev1.Hook{hook("storage-readiness", 0, false), hook("rbac-bootstrap", 2*time.Second, true)},
			Checks: []*lifecyclev1.Check{okCheck("ping"), failCheck("etcd", "etcd unreachable"), failCheck("poststarthook/storage-readiness", "not finished"),
				okCheck("poststarthook/rbac-bootstrap"), okCheck("shutdown"), failCheck("only-on-b", "nope")}},
		{Service: "extensions", InstanceId: "ext-a", Ready: true, State: lifecyclev1.State_STATE_STOPPING,
			Hooks:  []*lifecyclev1.Hook{hook("storage-readiness", 42*time.Millisecond, true)},
			Checks: []*lifecyclev1.Check{okCheck("poststarthook/storage-readiness"), failCheck("shutdown", "process is shutting down")}},
		{Service: "extensions", InstanceId: "ext-b", Ready: false,
			Checks: []*lifecyclev1.Check{failCheck("shutdown", "process is shutting down")}},
		// The gateway's own state and unknown services are not backend checks.
		{Service: "gateway", InstanceId: "gw-a", Ready: true, Checks: []*lifecyclev1.Check{okCheck("ping")}},
	}
}

func TestRemoteChecks(t *testing.T) {
	got := render(checksOf(lifecycle.SourceNATS, clusterStates()...)())
	want := []renderedCheck{
		{Name: "lifecycle", Note: "from NATS"},
		{Name: "aggregator", Err: "no ready instance of aggregator (0 known)", Note: "0/0 instances ready"},
		{Name: "core", Note: "1/2 instances ready"},
		{Name: "core/ping"},
		{Name: "core/etcd"},
		{Name: "core/poststarthook/storage-readiness", Note: "1.5s"},
		{Name: "core/poststarthook/rbac-bootstrap", Note: "250ms, 2s"},
		{Name: "core/shutdown"},
		{Name: "core/only-on-b", Err: "core-b: nope"},
		{Name: "extensions", Err: "no ready instance of extensions (2 known)", Note: "0/2 instances ready"},
		{Name: "extensions/poststarthook/storage-readiness", Note: "42ms"},
		{Name: "extensions/shutdown", Err: "ext-a: process is shutting down; ext-b: process is shutting down"},
	}
	assert.Equal(t, want, got)
}

func TestRemoteChecksSource(t *testing.T) {
	tests := []struct {
		source lifecycle.Source
		note   string
	}{
		{lifecycle.SourceNATS, "from NATS"},
		{lifecycle.SourceGRPC, "NATS unreachable: readiness from grpc.health.v1 fallback"},
	}
	for _, tt := range tests {
		t.Run(string(tt.source), func(t *testing.T) {
			got := render(checksOf(tt.source)())
			require.NotEmpty(t, got)
			assert.Equal(t, renderedCheck{Name: "lifecycle", Note: tt.note}, got[0], "the source check never fails")
		})
	}
}

func TestServiceCheck(t *testing.T) {
	st := func(ready, shutting bool) *lifecyclev1.InstanceState {
		return &lifecyclev1.InstanceState{Service: "core", Ready: ready, State: stateOf(shutting)}
	}
	tests := []struct {
		name  string
		insts []*lifecyclev1.InstanceState
		ok    bool
		note  string
	}{
		{"none", nil, false, "0/0 instances ready"},
		{"one ready", []*lifecyclev1.InstanceState{st(true, false)}, true, "1/1 instances ready"},
		{"ready but shutting down does not count", []*lifecyclev1.InstanceState{st(true, true), st(false, false)}, false, "0/2 instances ready"},
		{"two of three", []*lifecyclev1.InstanceState{st(true, false), st(true, true), st(true, false)}, true, "2/3 instances ready"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := serviceCheck{service: "core", insts: tt.insts}
			assert.Equal(t, "core", c.Name())
			assert.Equal(t, tt.ok, c.Check(nil) == nil)
			assert.Equal(t, tt.note, c.Note())
		})
	}
}

func TestInstanceChecksHookDurations(t *testing.T) {
	tests := []struct {
		name  string
		insts []*lifecyclev1.InstanceState
		want  []renderedCheck
	}{
		{
			name:  "no instances, no checks",
			insts: nil,
			want:  []renderedCheck{},
		},
		{
			name: "durations are rounded to milliseconds",
			insts: []*lifecyclev1.InstanceState{{InstanceId: "a",
				Hooks:  []*lifecyclev1.Hook{hook("h", 1234567*time.Microsecond, true)},
				Checks: []*lifecyclev1.Check{okCheck("poststarthook/h")}}},
			want: []renderedCheck{{Name: "svc/poststarthook/h", Note: "1.235s"}},
		},
		{
			name: "an unfinished hook has no duration",
			insts: []*lifecyclev1.InstanceState{{InstanceId: "a",
				Hooks:  []*lifecyclev1.Hook{hook("h", 0, false)},
				Checks: []*lifecyclev1.Check{failCheck("poststarthook/h", "not finished")}}},
			want: []renderedCheck{{Name: "svc/poststarthook/h", Err: "a: not finished"}},
		},
		{
			name: "a hook without a start time has no duration",
			insts: []*lifecyclev1.InstanceState{{InstanceId: "a",
				Hooks:  []*lifecyclev1.Hook{{Name: "h", FinishedAt: timestamppb.New(t0)}},
				Checks: []*lifecyclev1.Check{okCheck("poststarthook/h")}}},
			want: []renderedCheck{{Name: "svc/poststarthook/h"}},
		},
		{
			name: "a hook's duration is only noted on its own check",
			insts: []*lifecyclev1.InstanceState{{InstanceId: "a",
				Hooks:  []*lifecyclev1.Hook{hook("etcd", time.Second, true)},
				Checks: []*lifecyclev1.Check{okCheck("etcd"), okCheck("poststarthook/etcd")}}},
			want: []renderedCheck{{Name: "svc/etcd"}, {Name: "svc/poststarthook/etcd", Note: "1s"}},
		},
		{
			name: "checks keep the first instance's order, later names appended",
			insts: []*lifecyclev1.InstanceState{
				{InstanceId: "a", Checks: []*lifecyclev1.Check{okCheck("z"), okCheck("a")}},
				{InstanceId: "b", Checks: []*lifecyclev1.Check{okCheck("a"), okCheck("m"), okCheck("z")}},
			},
			want: []renderedCheck{{Name: "svc/z"}, {Name: "svc/a"}, {Name: "svc/m"}},
		},
		{
			name: "ok on any instance is ok",
			insts: []*lifecyclev1.InstanceState{
				{InstanceId: "a", Checks: []*lifecyclev1.Check{failCheck("etcd", "down")}},
				{InstanceId: "b", Checks: []*lifecyclev1.Check{okCheck("etcd")}},
			},
			want: []renderedCheck{{Name: "svc/etcd"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, render(instanceChecks("svc", tt.insts)))
		})
	}
}

// TestRemoteChecksVerboseReadyz renders the checks the way /readyz?verbose does.
func TestRemoteChecksVerboseReadyz(t *testing.T) {
	states := []*lifecyclev1.InstanceState{
		{Service: "aggregator", InstanceId: "agg-a", Ready: true, Checks: []*lifecyclev1.Check{okCheck("ping")}},
		{Service: "core", InstanceId: "core-a", Ready: true,
			Hooks:  []*lifecyclev1.Hook{hook("rbac-bootstrap", 320*time.Millisecond, true)},
			Checks: []*lifecyclev1.Check{okCheck("poststarthook/rbac-bootstrap")}},
		{Service: "extensions", InstanceId: "ext-a", Ready: true, Checks: []*lifecyclev1.Check{okCheck("ping")}},
	}
	h := healthz.Handler("readyz", checksOf(lifecycle.SourceGRPC, states...))

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz?verbose", nil))
	assert.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	want := strings.Join([]string{
		"[+]lifecycle ok (NATS unreachable: readiness from grpc.health.v1 fallback)",
		"[+]aggregator ok (1/1 instances ready)",
		"[+]aggregator/ping ok",
		"[+]core ok (1/1 instances ready)",
		"[+]core/poststarthook/rbac-bootstrap ok (320ms)",
		"[+]extensions ok (1/1 instances ready)",
		"[+]extensions/ping ok",
		"readyz check passed",
		"",
	}, "\n")
	assert.Equal(t, want, rec.Body.String())

	// Without core's instance the service check fails, and readyz with it.
	h = healthz.Handler("readyz", checksOf(lifecycle.SourceNATS, states[0], states[2]))
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz?verbose", nil))
	assert.Equal(t, http.StatusInternalServerError, rec.Code)
	assert.Contains(t, rec.Body.String(), "[+]lifecycle ok (from NATS)\n")
	assert.Contains(t, rec.Body.String(), "[-]core failed: reason withheld\n")
}

func stateOf(shuttingDown bool) lifecyclev1.State {
	if shuttingDown {
		return lifecyclev1.State_STATE_STOPPING
	}
	return lifecyclev1.State_STATE_RUNNING
}

// A backend's check notes reach the gateway's verbose line (with the instance when there are
// several), and its failing webhooks become metrics.
func TestRemoteNotesAndFailingWebhooks(t *testing.T) {
	failing := []*lifecyclev1.FailingWebhook{{Name: "deny.example.com", Configuration: "ValidatingWebhookConfiguration/c",
		Failures: 7, LastError: "connection refused", Open: true}}
	states := []*lifecyclev1.InstanceState{
		{Service: "core", InstanceId: "core-a", Ready: true, FailingWebhooks: failing,
			Checks: []*lifecyclev1.Check{{Name: "admission-webhooks", Ok: true, Note: "failing: deny.example.com"}}},
		{Service: "core", InstanceId: "core-b", Ready: true,
			Checks: []*lifecyclev1.Check{{Name: "admission-webhooks", Ok: true, Note: "no webhook failing"}}},
		{Service: "extensions", InstanceId: "ext-a", Ready: true,
			Checks: []*lifecyclev1.Check{{Name: "admission-webhooks", Ok: true, Note: "no webhook failing"}}},
	}
	got := render(checksOf(lifecycle.SourceNATS, states...)())
	assert.Contains(t, got, renderedCheck{Name: "core/admission-webhooks", Note: "core-a: failing: deny.example.com, core-b: no webhook failing"})
	assert.Contains(t, got, renderedCheck{Name: "extensions/admission-webhooks", Note: "no webhook failing"})

	reg := lifecycle.NewRegistry(time.Hour)
	for _, st := range states {
		reg.Upsert(st, lifecycle.SourceNATS)
	}
	metrics := prometheus.NewRegistry()
	metrics.MustRegister(WebhookCollector(reg))
	require.NoError(t, testutil.GatherAndCompare(metrics, strings.NewReader(`
# HELP apichain_admission_webhook_consecutive_failures Calls in a row to an admission webhook that failed (could not be made or not understood), per backend instance; a webhook is listed only while failing.
# TYPE apichain_admission_webhook_consecutive_failures gauge
apichain_admission_webhook_consecutive_failures{configuration="ValidatingWebhookConfiguration/c",instance="core-a",service="core",webhook="deny.example.com"} 7
# HELP apichain_admission_webhook_paused 1 while a failing admission webhook is not called and its failurePolicy answers at once, per backend instance.
# TYPE apichain_admission_webhook_paused gauge
apichain_admission_webhook_paused{configuration="ValidatingWebhookConfiguration/c",instance="core-a",service="core",webhook="deny.example.com"} 1
`)))
}
