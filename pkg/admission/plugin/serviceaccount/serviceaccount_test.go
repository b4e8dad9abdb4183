package serviceaccount

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

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
