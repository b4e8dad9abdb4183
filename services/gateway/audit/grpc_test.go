package audit

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/apichain/apichain/pkg/requestinfo"
	"github.com/apichain/apichain/pkg/user"
)

type collect struct {
	mu  sync.Mutex
	evs []*auditv1.Event
}

func (c *collect) Process(ev *auditv1.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.evs = append(c.evs, ev)
}

// A gRPC call is audited by the policy's rule for the resource its message names, not for
// the POST to its method that its path shows.
func TestGRPCRecordFollowsPolicyOfMessage(t *testing.T) {
	file := filepath.Join(t.TempDir(), "policy.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: RequestResponse
  omitStages: [ResponseStarted]
  resources: [{group: "", resources: [configmaps]}]
- level: None
`), 0o600))
	policy, err := LoadPolicy(file)
	require.NoError(t, err)
	sink := &collect{}
	a := New(policy, sink)
	method := "/apichain.resource.v1.ResourceService/Create"
	path := &requestinfo.RequestInfo{Path: method, Verb: "post"}
	alice := &user.User{Name: "alice"}

	// Described: audited as a create of a configmap, from RequestReceived on.
	rec := a.StartGRPC(httptest.NewRequest("POST", method, nil), alice, path)
	assert.Empty(t, sink.evs, "nothing is known before the message is read")
	rec.Describe(&requestinfo.RequestInfo{IsResourceRequest: true, Verb: "create", APIVersion: "v1", Resource: "configmaps", Namespace: "ns"})
	rec.RequestObject("application/json", []byte(`{"metadata":{"name":"cm"}}`))
	rec.Emit(auditinternal.StageResponseComplete, &metav1.Status{Code: 201})
	require.Len(t, sink.evs, 2)
	for i, stage := range []auditv1.Stage{auditv1.StageRequestReceived, auditv1.StageResponseComplete} {
		ev := sink.evs[i]
		assert.Equal(t, stage, ev.Stage)
		assert.Equal(t, auditv1.LevelRequestResponse, ev.Level)
		assert.Equal(t, "create", ev.Verb)
		// The name is in the object, read after RequestReceived (as kube's create).
		name := map[bool]string{true: "cm"}[i == 1]
		assert.Equal(t, &auditv1.ObjectReference{Resource: "configmaps", Namespace: "ns", Name: name, APIVersion: "v1"}, ev.ObjectRef)
	}
	assert.JSONEq(t, `{"metadata":{"name":"cm"}}`, string(sink.evs[1].RequestObject.Raw))

	// Another resource: not audited.
	sink.evs = nil
	rec = a.StartGRPC(httptest.NewRequest("POST", method, nil), alice, path)
	rec.Describe(&requestinfo.RequestInfo{IsResourceRequest: true, Verb: "create", APIVersion: "v1", Resource: "secrets", Namespace: "ns"})
	rec.Emit(auditinternal.StageResponseComplete, &metav1.Status{Code: 201})
	assert.Empty(t, sink.evs)

	// Answered before the gRPC server read it (a 429): the path's rule decides, here None.
	rec = a.StartGRPC(httptest.NewRequest("POST", method, nil), alice, path)
	rec.Emit(auditinternal.StageResponseComplete, &metav1.Status{Code: 429})
	assert.Empty(t, sink.evs)
}
