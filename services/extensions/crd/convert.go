package crd

import (
	"fmt"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/conversion"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
)

// converterFactory is kube's custom resource converter factory (k8s.io/apiextensions-apiserver's
// conversion package: the ConversionReview it sends, v1 or v1beta1 as the CRD asks, the caBundle
// and service or URL client, the checks of the answer, metadata restored but for labels and
// annotations, and the error messages), built at the first CRD that asks for webhook conversion.
var converterFactory = sync.OnceValues(func() (*conversion.CRConverterFactory, error) {
	return conversion.NewCRConverterFactory(webhookutil.NewDefaultServiceResolver(), nil)
})

// webhookConversion converts a CRD's custom resources between its versions by its conversion
// webhook, and treats what comes back as kube's schema-coercing converter does: pruned and its
// metadata coerced by the target version's schema. What is read from storage is first
// defaulted by the schema of the version it was stored in, as kube defaults on reading etcd.
type webhookConversion struct {
	convertor runtime.ObjectConvertor
	schemas   map[string]*structuralschema.Structural // by version
}

// newWebhookConversion is the conversion of a CRD whose strategy is Webhook; nil for None.
func newWebhookConversion(crd *apiextensionsv1.CustomResourceDefinition) (*webhookConversion, error) {
	if crd.Spec.Conversion == nil || crd.Spec.Conversion.Strategy != apiextensionsv1.WebhookConverter {
		return nil, nil
	}
	factory, err := converterFactory()
	if err != nil {
		return nil, err
	}
	safe, _, err := factory.NewConverter(crd)
	if err != nil {
		return nil, err
	}
	c := &webhookConversion{convertor: safe, schemas: map[string]*structuralschema.Structural{}}
	for _, v := range crd.Spec.Versions {
		cs, err := newCustomSchema(v)
		if err != nil {
			return nil, fmt.Errorf("version %s: %w", v.Name, err)
		}
		c.schemas[v.Name] = cs.structural
	}
	return c, nil
}

// convert is registry.Resource's ConvertVersion; its errors are the converter's ("conversion
// webhook for stable.example.com/v1, Kind=Foo failed: ...").
func (c *webhookConversion) convert(obj runtime.Object, to schema.GroupVersion) (runtime.Object, error) {
	c.each(obj, func(u map[string]any, version string) {
		if s := c.schemas[version]; s != nil {
			structuraldefaulting.Default(u, s)
		}
	})
	out, err := c.convertor.ConvertToVersion(obj, to)
	if err != nil {
		return nil, err
	}
	if s := c.schemas[to.Version]; s != nil {
		c.each(out, func(u map[string]any, _ string) {
			pruning.Prune(u, s, true)
			_ = objectmeta.Coerce(nil, u, s, true, true)
		})
	}
	return out, nil
}

// each calls f with every object of obj (one, or a list's items) and its version.
func (c *webhookConversion) each(obj runtime.Object, f func(u map[string]any, version string)) {
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		f(o.Object, o.GroupVersionKind().Version)
	case *unstructured.UnstructuredList:
		for i := range o.Items {
			f(o.Items[i].Object, o.Items[i].GroupVersionKind().Version)
		}
	}
}
