// Package serviceaccount is kube's ServiceAccount admission plugin: a pod's service account,
// its token volume and image pull secrets.
package serviceaccount

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apichain/apichain/pkg/controller/serviceaccount"
	"github.com/apichain/apichain/pkg/registry"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/utils/ptr"
)

const (
	defaultServiceAccount = "default"
	// tokenMountPath is where every container finds its service account's token, the
	// cluster's CA and its namespace.
	tokenMountPath  = "/var/run/secrets/kubernetes.io/serviceaccount"
	tokenVolumeBase = "kube-api-access-"
	// tokenExpiration is kube's 3607 s for the projected token (the kubelet's warn-only
	// lifetime, which the token issuer extends).
	tokenExpiration = 3607
	mirrorPodKey    = "kubernetes.io/config.mirror"
)

// ServiceAccounts is kube's ServiceAccount admission plugin for pods: a pod created without a
// service account gets "default"; the account must exist (the default one gets a couple of
// seconds to be made by the namespace's controller); unless the pod or the account says
// otherwise, every container mounts a projected volume with a bound token, the cluster's CA
// (the kube-root-ca.crt ConfigMap) and the namespace; the account's image pull secrets are
// the pod's if it names none. Mirror pods may reference neither accounts, secret volumes,
// image pull secrets nor token projections.
type ServiceAccounts struct {
	client *registry.Client
	wait   time.Duration // between lookups of the default account
}

// New reads service accounts through client.
func New(client *registry.Client) *ServiceAccounts {
	return &ServiceAccounts{client: client, wait: 150 * time.Millisecond}
}

// Admit mutates a pod being created.
func (s *ServiceAccounts) Admit(ctx context.Context, a admission.Attributes) error {
	pod, ok := a.GetObject().(*corev1.Pod)
	if !ok || a.GetOperation() != admission.Create || a.GetResource().GroupResource() != corev1.Resource("pods") || a.GetSubresource() != "" {
		return nil
	}
	if _, mirror := pod.Annotations[mirrorPodKey]; mirror {
		return validateMirrorPod(a, pod)
	}
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = defaultServiceAccount
		pod.Spec.DeprecatedServiceAccount = defaultServiceAccount //nolint:staticcheck // kept in sync, as kube does
	}
	sa, err := s.get(ctx, a.GetNamespace(), pod.Spec.ServiceAccountName)
	if err != nil {
		return admission.NewForbidden(a, fmt.Errorf("error looking up service account %s/%s: %w", a.GetNamespace(), pod.Spec.ServiceAccountName, err))
	}
	if automount(sa, pod) {
		mountToken(pod)
	}
	if len(pod.Spec.ImagePullSecrets) == 0 && len(sa.ImagePullSecrets) > 0 {
		pod.Spec.ImagePullSecrets = append([]corev1.LocalObjectReference(nil), sa.ImagePullSecrets...)
	}
	return nil
}

func (s *ServiceAccounts) get(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	r, ok := s.client.Lookup(corev1.SchemeGroupVersion.WithResource("serviceaccounts"))
	if !ok {
		return nil, errors.New("service accounts are not readable here")
	}
	attempts := 1
	if name == defaultServiceAccount {
		attempts = 10 // the namespace's controller makes it soon after the namespace
	}
	for i := range attempts {
		if i > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(s.wait):
			}
		}
		obj, err := s.client.Get(ctx, r, namespace, name)
		if err == nil {
			return obj.(*corev1.ServiceAccount), nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, err
		}
	}
	return nil, apierrors.NewNotFound(corev1.Resource("serviceaccount"), name)
}

func automount(sa *corev1.ServiceAccount, pod *corev1.Pod) bool {
	if pod.Spec.AutomountServiceAccountToken != nil {
		return *pod.Spec.AutomountServiceAccountToken
	}
	if sa.AutomountServiceAccountToken != nil {
		return *sa.AutomountServiceAccountToken
	}
	return true
}

// mountToken mounts the token volume in every container that has nothing at its path, adding
// the volume (kube-api-access-<random>) unless the pod has one.
func mountToken(pod *corev1.Pod) {
	name := ""
	for _, v := range pod.Spec.Volumes {
		if len(v.Name) > len(tokenVolumeBase) && v.Name[:len(tokenVolumeBase)] == tokenVolumeBase {
			name = v.Name
			break
		}
	}
	hasVolume := name != ""
	if !hasVolume {
		name = registry.GenerateName(tokenVolumeBase)
	}
	needed := false
	mount := func(containers []corev1.Container) {
		for i := range containers {
			mounted := false
			for _, m := range containers[i].VolumeMounts {
				mounted = mounted || m.MountPath == tokenMountPath
			}
			if !mounted {
				containers[i].VolumeMounts = append(containers[i].VolumeMounts, corev1.VolumeMount{Name: name, ReadOnly: true, MountPath: tokenMountPath})
				needed = true
			}
		}
	}
	mount(pod.Spec.InitContainers)
	mount(pod.Spec.Containers)
	if hasVolume || !needed {
		return
	}
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: ptr.To[int32](corev1.ProjectedVolumeSourceDefaultMode),
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](tokenExpiration)}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: serviceaccount.RootCAConfigMap},
				Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace",
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		},
	}}})
}

func validateMirrorPod(a admission.Attributes, pod *corev1.Pod) error {
	if pod.Spec.ServiceAccountName != "" {
		return admission.NewForbidden(a, errors.New("a mirror pod may not reference service accounts"))
	}
	for _, v := range pod.Spec.Volumes {
		if v.Secret != nil {
			return admission.NewForbidden(a, errors.New("a mirror pod may not reference secrets"))
		}
		if v.Projected != nil {
			for _, src := range v.Projected.Sources {
				if src.Secret != nil {
					return admission.NewForbidden(a, errors.New("a mirror pod may not reference secrets"))
				}
				if src.ServiceAccountToken != nil {
					return admission.NewForbidden(a, errors.New("a mirror pod may not use ServiceAccountToken volume projections"))
				}
			}
		}
	}
	for _, s := range pod.Spec.ImagePullSecrets {
		if s.Name != "" {
			return admission.NewForbidden(a, errors.New("a mirror pod may not reference secrets"))
		}
	}
	return nil
}
