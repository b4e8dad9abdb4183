// Package registry is the generic REST storage every backend serves resources with: kube's
// verbs on typed objects kept in etcd, with kube's metadata rules, optimistic concurrency,
// selectors, pagination, watches, patches, content negotiation and Table output.
package registry

import (
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Scheme holds the types a backend serves.
type Scheme struct {
	*runtime.Scheme
	Codecs serializer.CodecFactory
}

// NewScheme registers meta types plus every install function given (k8s.io/api's AddToScheme).
func NewScheme(install ...func(*runtime.Scheme) error) (*Scheme, error) {
	s := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(s); err != nil {
		return nil, err
	}
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	// The scale subresource answers with autoscaling/v1 Scale, whatever the kinds.
	s.AddKnownTypes(autoscalingv1.SchemeGroupVersion, &autoscalingv1.Scale{})
	for _, f := range install {
		if err := f(s); err != nil {
			return nil, err
		}
	}
	// Decoding is lenient unless a request asks for fieldValidation=Strict (decode picks the
	// StrictSerializer then), as kube: unknown fields are dropped by default.
	return &Scheme{Scheme: s, Codecs: serializer.NewCodecFactory(s)}, nil
}
