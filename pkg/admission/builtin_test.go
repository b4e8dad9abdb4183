package admission

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// The LimitRanger's checks give kube's messages, per container and for the pod as a whole
// (sidecars add up, a plain init container counts only as its own peak).
func TestLimitRangerChecks(t *testing.T) {
	lr := &corev1.LimitRange{Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{
		{Type: corev1.LimitTypeContainer, Max: rl("cpu", "1"), Min: rl("cpu", "100m"), MaxLimitRequestRatio: rl("cpu", "2")},
		{Type: corev1.LimitTypePod, Max: rl("memory", "1Gi")},
	}}}
	ok := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{container("a", rl("cpu", "500m", "memory", "100Mi"), rl("cpu", "1", "memory", "500Mi"))}}}
	require.NoError(t, validatePodLimits(lr, ok))

	for _, tc := range []struct {
		name string
		pod  corev1.PodSpec
		want string
	}{
		{"over max", corev1.PodSpec{Containers: []corev1.Container{container("a", rl("cpu", "500m"), rl("cpu", "2", "memory", "1Mi"))}},
			"maximum cpu usage per Container is 1, but limit is 2"},
		{"no limit", corev1.PodSpec{Containers: []corev1.Container{container("a", rl("cpu", "500m"), rl("memory", "1Mi"))}},
			"maximum cpu usage per Container is 1.  No limit is specified"},
		{"under min", corev1.PodSpec{Containers: []corev1.Container{container("a", rl("cpu", "50m"), rl("cpu", "60m", "memory", "1Mi"))}},
			"minimum cpu usage per Container is 100m, but request is 50m"},
		{"ratio", corev1.PodSpec{Containers: []corev1.Container{container("a", rl("cpu", "200m"), rl("cpu", "1", "memory", "1Mi"))}},
			"cpu max limit to request ratio per Container is 2, but provided ratio is 5.000000"},
		{"pod sum with a sidecar", corev1.PodSpec{
			Containers: []corev1.Container{container("a", rl("cpu", "500m"), rl("cpu", "1", "memory", "600Mi"))},
			InitContainers: []corev1.Container{func() corev1.Container {
				c := container("side", rl("cpu", "500m"), rl("cpu", "1", "memory", "600Mi"))
				c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
				return c
			}()}},
			"maximum memory usage per Pod is 1Gi, but limit is 1200Mi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := validatePodLimits(lr, &corev1.Pod{Spec: tc.pod})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	// A plain init container that needs more than the containers sets the pod's peak.
	peak := podResources(&corev1.Pod{Spec: corev1.PodSpec{
		Containers:     []corev1.Container{container("a", rl("cpu", "100m"), nil)},
		InitContainers: []corev1.Container{container("init", rl("cpu", "300m"), nil)},
	}}, true)
	assert.Equal(t, "300m", ptr.To(peak[corev1.ResourceCPU]).String())
}

func TestLimitRangerDefaults(t *testing.T) {
	c := container("a", rl("cpu", "1"), nil)
	notes := mergeDefaults(&c, corev1.ResourceRequirements{Requests: rl("cpu", "100m", "memory", "64Mi"), Limits: rl("cpu", "500m")}, "container", nil)
	assert.Equal(t, []string{"memory request for container a", "cpu limit for container a"}, notes)
	assert.Equal(t, "1", ptr.To(c.Resources.Requests[corev1.ResourceCPU]).String(), "what the container set is kept")
	assert.Equal(t, "64Mi", ptr.To(c.Resources.Requests[corev1.ResourceMemory]).String())
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

// The ServiceAccount plugin mounts the token where nothing is mounted, once.
func TestMountToken(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init"}},
		Containers:     []corev1.Container{{Name: "a"}, {Name: "own", VolumeMounts: []corev1.VolumeMount{{Name: "mine", MountPath: tokenMountPath}}}},
	}}
	mountToken(pod)
	require.Len(t, pod.Spec.Volumes, 1)
	name := pod.Spec.Volumes[0].Name
	assert.True(t, strings.HasPrefix(name, "kube-api-access-") && len(name) == len("kube-api-access-")+5, name)
	assert.Equal(t, []corev1.VolumeMount{{Name: name, ReadOnly: true, MountPath: tokenMountPath}}, pod.Spec.InitContainers[0].VolumeMounts)
	assert.Equal(t, []corev1.VolumeMount{{Name: name, ReadOnly: true, MountPath: tokenMountPath}}, pod.Spec.Containers[0].VolumeMounts)
	assert.Equal(t, []corev1.VolumeMount{{Name: "mine", MountPath: tokenMountPath}}, pod.Spec.Containers[1].VolumeMounts, "an existing mount wins")
	src := pod.Spec.Volumes[0].Projected
	require.NotNil(t, src)
	assert.EqualValues(t, 3607, *src.Sources[0].ServiceAccountToken.ExpirationSeconds)
	assert.Equal(t, "kube-root-ca.crt", src.Sources[1].ConfigMap.Name)

	mountToken(pod)
	assert.Len(t, pod.Spec.Volumes, 1, "mounted once")
	assert.Len(t, pod.Spec.Containers[0].VolumeMounts, 1)
}
