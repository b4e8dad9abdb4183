package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/embedded"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// readAudit decodes every line of the audit log strictly as an audit.k8s.io/v1 Event.
func readAudit(t *testing.T, path string) ([]*auditv1.Event, []byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil
	}
	var out []*auditv1.Event
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 8<<20)
	for sc.Scan() {
		out = append(out, decodeEvent(t, sc.Bytes()))
	}
	require.NoError(t, sc.Err())
	return out, data
}

func decodeEvent(t *testing.T, line []byte) *auditv1.Event {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	ev := &auditv1.Event{}
	require.NoError(t, dec.Decode(ev), "%s", line)
	require.Equal(t, "audit.k8s.io/v1", ev.APIVersion)
	require.Equal(t, "Event", ev.Kind)
	return ev
}

// With the default policy, the audit log holds one audit.k8s.io/v1 Event per stage, secrets
// only at Metadata, impersonated requests with both users, failed authentication, and gRPC
// calls described like REST requests; the NATS backend delivers the same events.
func TestAuditLogAndNATS(t *testing.T) {
	natsSrv, err := embedded.StartNATS(t.TempDir(), "127.0.0.1", 0)
	require.NoError(t, err)
	t.Cleanup(natsSrv.Stop)
	logPath := filepath.Join(t.TempDir(), "audit.log")
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	writeFile(t, tokens, "bob-token,bob,1002\n")
	c, _ := startAllInOne(t, "--nats-url", natsSrv.URL(), "--audit-log-path", logPath, "--audit-nats-subject", "audit.events",
		"--token-auth-file", tokens)
	admin := kc{t: t, kubeconfig: filepath.Join(c.data, "admin.kubeconfig")}

	admin.run("create", "namespace", "audited")
	admin.run("create", "secret", "generic", "creds", "-n", "audited", "--from-literal=password=hunter2-never-logged")
	admin.run("get", "secret", "creds", "-n", "audited", "-o", "yaml")
	admin.run("create", "configmap", "settings", "-n", "audited", "--from-literal=k=v")
	admin.run("label", "namespace", "audited", "team=a")
	assert.Contains(t, admin.fails("get", "pods", "-n", "audited", "--as=bob"),
		`User "bob" cannot list resource "pods" in API group "" in the namespace "audited"`)
	bob := kc{t: t, kubeconfig: tokenKubeconfig(t, c, "wrong-token")}
	bob.fails("get", "pods")
	conn := grpcConn(t, c, true)
	_, err = resourcev1.NewResourceServiceClient(conn).Create(context.Background(), &resourcev1.CreateRequest{
		Ref:  &resourcev1.ResourceRef{Version: "v1", Resource: "configmaps", Namespace: "audited"},
		Body: &resourcev1.Body{ContentType: "application/json", Data: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"via-grpc"},"data":{"a":"b"}}`)},
	})
	require.NoError(t, err)

	find := func(events []*auditv1.Event, match func(*auditv1.Event) bool) *auditv1.Event {
		for _, ev := range events {
			if match(ev) {
				return ev
			}
		}
		return nil
	}
	grpcCreate := func(ev *auditv1.Event) bool {
		return ev.Verb == "create" && ev.ObjectRef != nil && ev.ObjectRef.Name == "via-grpc" && ev.Stage == auditv1.StageResponseComplete
	}
	var events []*auditv1.Event
	var raw []byte
	require.Eventually(t, func() bool {
		events, raw = readAudit(t, logPath)
		return find(events, grpcCreate) != nil
	}, 10*time.Second, 20*time.Millisecond, "the gRPC call's event is logged")

	assert.NotContains(t, string(raw), "hunter2-never-logged")
	assert.NotContains(t, string(raw), "aHVudGVyMi1uZXZlci1sb2dnZWQ=", "nor its base64")
	for _, ev := range events {
		assert.NotEqual(t, auditv1.StageRequestReceived, ev.Stage, "the default policy omits RequestReceived")
		assert.False(t, strings.HasPrefix(ev.RequestURI, "/readyz"), "probes are not audited")
		if ev.ObjectRef != nil && ev.ObjectRef.Resource == "secrets" {
			assert.Equal(t, auditv1.LevelMetadata, ev.Level)
			assert.Nil(t, ev.RequestObject)
			assert.Nil(t, ev.ResponseObject)
		}
	}
	secret := find(events, func(ev *auditv1.Event) bool {
		return ev.Verb == "create" && ev.ObjectRef != nil && ev.ObjectRef.Resource == "secrets"
	})
	require.NotNil(t, secret)
	assert.Equal(t, "creds", secret.ObjectRef.Name)
	assert.Equal(t, int32(201), secret.ResponseStatus.Code)
	assert.Equal(t, "kubernetes-admin", secret.User.Username)
	assert.Equal(t, "allow", secret.Annotations["authorization.k8s.io/decision"])

	cm := find(events, func(ev *auditv1.Event) bool {
		return ev.Verb == "create" && ev.ObjectRef != nil && ev.ObjectRef.Name == "settings"
	})
	require.NotNil(t, cm)
	assert.Equal(t, auditv1.LevelMetadata, cm.Level, "config maps are credentials-like under the default policy")
	patch := find(events, func(ev *auditv1.Event) bool { return ev.Verb == "patch" && ev.ObjectRef.Resource == "namespaces" })
	require.NotNil(t, patch)
	assert.Equal(t, auditv1.LevelRequestResponse, patch.Level)
	assert.Contains(t, string(patch.RequestObject.Raw), `"team":"a"`)
	assert.Contains(t, string(patch.ResponseObject.Raw), `"name":"audited"`)

	denied := find(events, func(ev *auditv1.Event) bool { return ev.ImpersonatedUser != nil && ev.Verb == "list" })
	require.NotNil(t, denied)
	assert.Equal(t, "kubernetes-admin", denied.User.Username)
	assert.Equal(t, "bob", denied.ImpersonatedUser.Username)
	assert.Equal(t, int32(403), denied.ResponseStatus.Code)
	assert.Equal(t, "forbid", denied.Annotations["authorization.k8s.io/decision"])

	unauth := find(events, func(ev *auditv1.Event) bool { return ev.ResponseStatus != nil && ev.ResponseStatus.Code == 401 })
	require.NotNil(t, unauth)
	assert.Empty(t, unauth.User.Username)
	assert.Equal(t, auditv1.StageResponseStarted, unauth.Stage)

	g := find(events, grpcCreate)
	assert.Equal(t, "configmaps", g.ObjectRef.Resource)
	assert.Equal(t, "audited", g.ObjectRef.Namespace)
	assert.Equal(t, "kubernetes-admin", g.User.Username)

	// The NATS stream holds the same events.
	nc, err := nats.Connect(natsSrv.URL())
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	ctx := context.Background()
	keys := func(evs []*auditv1.Event) []string {
		var out []string
		for _, ev := range evs {
			out = append(out, string(ev.AuditID)+" "+string(ev.Stage))
		}
		sort.Strings(out)
		return out
	}
	events, _ = readAudit(t, logPath)
	want := keys(events)
	var got []*auditv1.Event
	require.Eventually(t, func() bool {
		cons, err := js.OrderedConsumer(ctx, "APICHAIN_AUDIT", jetstream.OrderedConsumerConfig{})
		if err != nil {
			return false
		}
		batch, err := cons.FetchNoWait(10000)
		if err != nil {
			return false
		}
		got = nil
		for msg := range batch.Messages() {
			got = append(got, decodeEvent(t, msg.Data()))
		}
		return len(keys(got)) >= len(want)
	}, 10*time.Second, 50*time.Millisecond)
	assert.Subset(t, keys(got), want, "every logged event is in the stream")
}
