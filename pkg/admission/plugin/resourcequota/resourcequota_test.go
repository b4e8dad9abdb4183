package resourcequota

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func container(name string, requests, limits corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: name, Image: "nginx", Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}
}

// The pod quota evaluator charges what kube charges.
func TestPodQuota(t *testing.T) {
	p := &podQuota{}
	running := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
		container("a", rl("cpu", "250m", "memory", "1Gi", "hugepages-2Mi", "4Mi", "example.com/gpu", "1"), rl("cpu", "1"))}}}
	usage, err := p.Usage(running)
	require.NoError(t, err)
	got := map[string]string{}
	for k, v := range usage {
		got[string(k)] = v.String()
	}
	assert.Equal(t, map[string]string{"count/pods": "1", "pods": "1", "cpu": "250m", "requests.cpu": "250m", "limits.cpu": "1",
		"memory": "1Gi", "requests.memory": "1Gi", "hugepages-2Mi": "4Mi", "requests.hugepages-2Mi": "4Mi",
		"requests.example.com/gpu": "1"}, got)

	done := running.DeepCopy()
	done.Status.Phase = corev1.PodSucceeded
	usage, err = p.Usage(done)
	require.NoError(t, err)
	assert.Len(t, usage, 1, "an ended pod counts only as an object")

	err = p.Constraints([]corev1.ResourceName{"requests.cpu", "limits.memory", "pods"}, &corev1.Pod{Spec: corev1.PodSpec{
		Containers: []corev1.Container{container("b", nil, nil), container("a", rl("cpu", "1"), rl("memory", "1Gi"))}}})
	require.Error(t, err)
	assert.Equal(t, "must specify limits.memory for: b; requests.cpu for: b", err.Error())

	best := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{container("a", nil, nil)}, PriorityClassName: "high",
		ActiveDeadlineSeconds: ptr.To[int64](10)}}
	for scope, want := range map[corev1.ResourceQuotaScope]bool{
		corev1.ResourceQuotaScopeBestEffort: true, corev1.ResourceQuotaScopeNotBestEffort: false,
		corev1.ResourceQuotaScopeTerminating: true, corev1.ResourceQuotaScopeNotTerminating: false,
		corev1.ResourceQuotaScopeCrossNamespacePodAffinity: false,
	} {
		got, err := podMatchesScope(corev1.ScopedResourceSelectorRequirement{ScopeName: scope}, best)
		require.NoError(t, err)
		assert.Equal(t, want, got, "%s", scope)
	}
	for _, tc := range []struct {
		op     corev1.ScopeSelectorOperator
		values []string
		want   bool
	}{{corev1.ScopeSelectorOpIn, []string{"high"}, true}, {corev1.ScopeSelectorOpNotIn, []string{"high"}, false},
		{corev1.ScopeSelectorOpExists, nil, true}, {corev1.ScopeSelectorOpDoesNotExist, nil, false}} {
		got, err := podMatchesScope(corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: tc.op, Values: tc.values}, best)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "%s %v", tc.op, tc.values)
	}
}
