package apiregistration

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// An APIService survives its protobuf form whole, every field set or left empty.
func TestProtobufRoundTrip(t *testing.T) {
	full := &APIService{ObjectMeta: metav1.ObjectMeta{Name: "v1.example.com", UID: "u", Labels: map[string]string{"a": "b"}},
		Spec: APIServiceSpec{Service: &ServiceReference{Namespace: "ns", Name: "svc", Port: ptr.To[int32](8443)}, Group: "example.com",
			Version: "v1", InsecureSkipTLSVerify: true, CABundle: []byte("ca"), GroupPriorityMinimum: -5, VersionPriority: 15},
		Status: APIServiceStatus{Conditions: []APIServiceCondition{{Type: Available, Status: ConditionFalse,
			LastTransitionTime: metav1.NewTime(time.Unix(1700000000, 0)), Reason: "FailedDiscoveryCheck", Message: "no"}}}}
	for _, in := range []*APIService{full, {ObjectMeta: metav1.ObjectMeta{Name: "v1."}, Spec: APIServiceSpec{Service: &ServiceReference{}, CABundle: []byte{}}}, {}} {
		data, err := in.Marshal()
		require.NoError(t, err)
		out := &APIService{}
		require.NoError(t, out.Unmarshal(data))
		if in.Status.Conditions != nil {
			out.Status.Conditions[0].LastTransitionTime = metav1.NewTime(out.Status.Conditions[0].LastTransitionTime.Local())
			in.Status.Conditions[0].LastTransitionTime = metav1.NewTime(in.Status.Conditions[0].LastTransitionTime.Local())
		}
		assert.Equal(t, in, out)
	}
	_, err := (&APIService{}).Marshal()
	require.NoError(t, err)
	assert.Error(t, (&APIService{}).Unmarshal([]byte{0x0a, 0x05, 0x01}), "truncated")
}
