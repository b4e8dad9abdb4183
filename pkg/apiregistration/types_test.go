package apiregistration

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A copy shares nothing with its original, and the JSON is kube's.
func TestDeepCopyAndJSON(t *testing.T) {
	port := int32(8443)
	a := &APIService{ObjectMeta: metav1.ObjectMeta{Name: "v1.a.io", Labels: map[string]string{"k": "v"}},
		Spec: APIServiceSpec{Service: &ServiceReference{Namespace: "ns", Name: "svc", Port: &port}, Group: "a.io", Version: "v1",
			CABundle: []byte("ca"), GroupPriorityMinimum: 100, VersionPriority: 10},
		Status: APIServiceStatus{Conditions: []APIServiceCondition{{Type: Available, Status: ConditionFalse, Reason: "R"}}}}
	c := a.DeepCopyObject().(*APIService)
	require.Equal(t, a, c)
	*c.Spec.Service.Port = 1
	c.Spec.CABundle[0] = 'X'
	c.Status.Conditions[0].Reason = "changed"
	c.Labels["k"] = "changed"
	assert.Equal(t, int32(8443), *a.Spec.Service.Port)
	assert.Equal(t, "ca", string(a.Spec.CABundle))
	assert.Equal(t, "R", a.Status.Conditions[0].Reason)
	assert.Equal(t, "v", a.Labels["k"])

	list := &APIServiceList{Items: []APIService{*a}}
	assert.Equal(t, list, list.DeepCopyObject())

	data, err := json.Marshal(&APIService{ObjectMeta: metav1.ObjectMeta{Name: "v1."}, Spec: APIServiceSpec{Version: "v1", GroupPriorityMinimum: 18000, VersionPriority: 1}})
	require.NoError(t, err)
	assert.JSONEq(t, `{"metadata":{"name":"v1."},"spec":{"version":"v1","groupPriorityMinimum":18000,"versionPriority":1},"status":{}}`, string(data))
}
