package limitranger

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
	peak := PodResources(&corev1.Pod{Spec: corev1.PodSpec{
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
