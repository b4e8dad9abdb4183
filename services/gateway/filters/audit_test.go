package filters

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apichain/apichain/pkg/authn"
	"github.com/apichain/apichain/pkg/requestinfo"
	"github.com/apichain/apichain/pkg/server"
	"github.com/apichain/apichain/pkg/user"
	"github.com/apichain/apichain/services/gateway/audit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

type collectSink struct {
	mu     sync.Mutex
	events []*auditv1.Event
}

func (s *collectSink) Process(ev *auditv1.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, ev)
}

// lines encodes the events as the log backend writes them.
func (s *collectSink) lines(t *testing.T) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, ev := range s.events {
		data, err := json.Marshal(ev)
		require.NoError(t, err)
		out = append(out, string(data))
	}
	return out
}

// decodeStrict decodes a JSON line as an audit.k8s.io/v1 Event, refusing unknown fields.
func decodeStrict(t *testing.T, line string) *auditv1.Event {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(line))
	dec.DisallowUnknownFields()
	ev := &auditv1.Event{}
	require.NoError(t, dec.Decode(ev), line)
	require.Equal(t, "Event", ev.Kind)
	require.Equal(t, "audit.k8s.io/v1", ev.APIVersion)
	return ev
}

// auditChain is the filter chain with kube's policy from the reference recording: secrets at
// Metadata, everything else at RequestResponse.
func auditChain(t *testing.T, policyYAML string, final http.Handler) (http.Handler, *collectSink) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	require.NoError(t, os.WriteFile(path, []byte(policyYAML), 0o600))
	policy, err := audit.LoadPolicy(path)
	require.NoError(t, err)
	sink := &collectSink{}
	tf, err := authn.ParseTokenFile(strings.NewReader("admin-token,admin,1,system:masters\nbob-token,bob,2\n"))
	require.NoError(t, err)
	authorizer := authorizerFunc(func(u *user.User, info *requestinfo.RequestInfo) (bool, string) {
		if u.Name == "admin" {
			return true, ""
		}
		return !info.IsResourceRequest, ""
	})
	return BuildHandlerChain(final, ChainConfig{
		Log: discardLog, RequestTimeout: time.Hour,
		Authentication: authn.Authentication{Authenticators: []authn.Authenticator{authn.NewBearer(nil, tf)}},
		Authorizer:     authorizer, Auditor: audit.New(policy, sink), InFlight: &server.SafeWaitGroup{},
	}), sink
}

const kubeRecordingPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: Metadata
  resources:
  - group: ""
    resources: ["secrets"]
- level: RequestResponse
`

// The events match those kube-apiserver 1.37.2 wrote for the same requests
// (testdata/kube-1.37.2.jsonl, recorded with the same policy): the same fields, levels,
// stages, verbs, objects, statuses and annotations.
func TestAuditEventsMatchKube(t *testing.T) {
	final := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(body)
	})
	h, sink := auditChain(t, kubeRecordingPolicy, final)
	do := func(method, target, token, body string, hdr ...string) int {
		r := httptest.NewRequest(method, target, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("User-Agent", "kubectl/v1.32.4 (linux/amd64) kubernetes/4cb5f07")
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	assert.Equal(t, 403, do("GET", "/api/v1/namespaces/default/pods?limit=500", "admin-token", "", "Impersonate-User", "bob"))
	assert.Equal(t, 201, do("POST", "/api/v1/namespaces/default/secrets?fieldManager=kubectl-create&fieldValidation=Strict", "admin-token",
		`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s1"},"data":{"k":"c3VwZXJzZWNyZXQ="}}`))
	assert.Equal(t, 401, do("GET", "/api/v1/namespaces/default/pods", "wrong-token", ""))
	assert.Equal(t, 201, do("POST", "/api/v1/namespaces/default/serviceaccounts?fieldManager=kubectl-create&fieldValidation=Strict", "admin-token",
		`{"kind":"ServiceAccount","apiVersion":"v1","metadata":{"name":"robot3"}}`))

	ours := map[string]*auditv1.Event{}
	oursRaw := map[string]string{}
	for _, line := range sink.lines(t) {
		ev := decodeStrict(t, line)
		key := ev.RequestURI + " " + string(ev.Stage)
		ours[key], oursRaw[key] = ev, line
	}
	f, err := os.Open("../audit/testdata/kube-1.37.2.jsonl")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		n++
		kube := decodeStrict(t, sc.Text())
		key := kube.RequestURI + " " + string(kube.Stage)
		ev, ok := ours[key]
		require.True(t, ok, "no event for %s; have %v", key, keysOf(ours))
		assert.Equal(t, fieldsOf(t, sc.Text()), fieldsOf(t, oursRaw[key]), key)
		assert.Equal(t, kube.Level, ev.Level, key)
		assert.Equal(t, kube.Verb, ev.Verb, key)
		assert.Equal(t, kube.ObjectRef, ev.ObjectRef, key)
		assert.Equal(t, kube.ResponseStatus, ev.ResponseStatus, key)
		assert.Equal(t, kube.Annotations[audit.DecisionAnnotation], ev.Annotations[audit.DecisionAnnotation], key)
		if kube.ImpersonatedUser != nil {
			require.NotNil(t, ev.ImpersonatedUser, key)
			assert.Equal(t, kube.ImpersonatedUser.Username, ev.ImpersonatedUser.Username)
			assert.Equal(t, "admin", ev.User.Username, "the user is who sent the request")
		}
		if kube.RequestObject != nil {
			assert.JSONEq(t, string(kube.RequestObject.Raw), string(ev.RequestObject.Raw), key)
		}
	}
	require.NoError(t, sc.Err())
	assert.Equal(t, 4, n)
	for _, line := range sink.lines(t) {
		assert.NotContains(t, line, "c3VwZXJzZWNyZXQ=", "a secret's data is never in an event at Metadata")
	}
}

// fieldsOf is the event's top-level fields, minus the authenticationMetadata of kube 1.37's
// constrained impersonation (not built here) and timestamps' values.
func fieldsOf(t *testing.T, line string) []string {
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(line), &m))
	var out []string
	for k := range m {
		if k != "authenticationMetadata" {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func keysOf(m map[string]*auditv1.Event) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Stages and the default policy: probes are not audited, secrets only at Metadata, a watch
// has a ResponseStarted stage, a panic a Panic stage, and RequestReceived is omitted.
func TestAuditStagesAndDefaultPolicy(t *testing.T) {
	final := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, _ := requestinfo.From(r.Context())
		if info.Name == "boom" {
			panic("boom")
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = io.Copy(w, r.Body)
	})
	h, sink := auditChain(t, string(audit.DefaultPolicyYAML), final)
	send := func(method, target, body string) {
		r := httptest.NewRequest(method, target, strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer admin-token")
		r.Header.Set("Content-Type", "application/json")
		func() {
			defer func() { _ = recover() }()
			h.ServeHTTP(httptest.NewRecorder(), r)
		}()
	}
	send("GET", "/readyz", "")
	send("PUT", "/api/v1/namespaces/a/secrets/s", `{"kind":"Secret","data":{"k":"dG9wc2VjcmV0"}}`)
	send("PUT", "/api/v1/namespaces/a/configmaps/c", `{"kind":"ConfigMap","data":{"k":"v"}}`)
	send("PUT", "/api/v1/namespaces/a/pods/p", `{"kind":"Pod","metadata":{"name":"p"}}`)
	send("GET", "/api/v1/namespaces/a/pods?watch=true", "")
	send("GET", "/api/v1/namespaces/a/pods/boom", "")

	var got []string
	for _, line := range sink.lines(t) {
		ev := decodeStrict(t, line)
		got = append(got, string(ev.Stage)+" "+string(ev.Level)+" "+ev.Verb+" "+ev.RequestURI)
		assert.NotContains(t, line, "dG9wc2VjcmV0")
		if ev.ObjectRef != nil && ev.ObjectRef.Resource == "pods" && ev.Verb == "update" {
			assert.JSONEq(t, `{"kind":"Pod","metadata":{"name":"p"}}`, string(ev.RequestObject.Raw))
			assert.JSONEq(t, `{"kind":"Pod","metadata":{"name":"p"}}`, string(ev.ResponseObject.Raw))
		}
		if ev.Stage == auditv1.StagePanic {
			assert.Equal(t, int32(500), ev.ResponseStatus.Code)
			assert.Contains(t, ev.ResponseStatus.Message, "APIServer panic'd: boom")
		}
	}
	assert.Equal(t, []string{
		"ResponseComplete Metadata update /api/v1/namespaces/a/secrets/s",
		"ResponseComplete Metadata update /api/v1/namespaces/a/configmaps/c",
		"ResponseComplete RequestResponse update /api/v1/namespaces/a/pods/p",
		"ResponseStarted Metadata watch /api/v1/namespaces/a/pods?watch=true",
		"ResponseComplete Metadata watch /api/v1/namespaces/a/pods?watch=true",
		"Panic Metadata get /api/v1/namespaces/a/pods/boom",
	}, got)
}

// A body over the limit passes through whole and is not recorded.
func TestAuditLargeBodyPassesThrough(t *testing.T) {
	var seen int
	final := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seen = len(b)
	})
	h, sink := auditChain(t, "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: RequestResponse\n", final)
	big := bytes.Repeat([]byte("x"), auditBodyLimit+10)
	r := httptest.NewRequest("POST", "/api/v1/namespaces/a/configmaps", bytes.NewReader(big))
	r.Header.Set("Authorization", "Bearer admin-token")
	r.Header.Set("Content-Type", "application/json")
	h.ServeHTTP(httptest.NewRecorder(), r)
	assert.Equal(t, len(big), seen)
	for _, line := range sink.lines(t) {
		assert.Nil(t, decodeStrict(t, line).RequestObject)
	}
}
