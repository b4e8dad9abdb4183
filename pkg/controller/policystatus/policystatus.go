// Package policystatus does in core what kube-controller-manager's
// validatingadmissionpolicy-status controller does: each ValidatingAdmissionPolicy's
// expressions are type-checked (kube's TypeChecker) against the schemas of the kinds its
// matchConstraints name, and the warnings are written to its status with the generation they
// are for.
package policystatus

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/apichain/apichain/pkg/registry"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// FieldManager is the status writer's name, kube's controller's.
const FieldManager = "validatingadmissionpolicy-status"

// Run type-checks policies whose status is behind their generation, after every write to
// them and every resync, until ctx ends. swaggerV2 is the OpenAPI v2 document of the kinds
// the policies may match (core's); kinds it does not have are not checked.
func Run(ctx context.Context, c *registry.Client, swaggerV2 func() ([]byte, error), log *slog.Logger, resync time.Duration) {
	r, ok := c.Lookup(admissionregistrationv1.SchemeGroupVersion.WithResource("validatingadmissionpolicies"))
	if !ok {
		return
	}
	var checker *validating.TypeChecker
	ctx = registry.WithFieldManager(ctx, FieldManager)
	registry.Reconcile(ctx, c, r, resync, func(ctx context.Context) error {
		err := reconcile(ctx, c, r, func() (*validating.TypeChecker, error) {
			// Built for the first policy to check, not at startup: it parses the whole v2
			// document (a fifth of a second of CPU), and most clusters have no policies.
			if checker == nil {
				doc, err := swaggerV2()
				if err != nil {
					return nil, err
				}
				if checker, err = NewTypeChecker(doc, c.Resources()); err != nil {
					return nil, err
				}
			}
			return checker, nil
		})
		if err != nil && ctx.Err() == nil {
			log.Warn("validating admission policy status", "err", err)
		}
		return err
	})
}

func reconcile(ctx context.Context, c *registry.Client, r *registry.Resource, typeChecker func() (*validating.TypeChecker, error)) error {
	objs, err := c.List(ctx, r, "", "")
	if err != nil {
		return err
	}
	for _, o := range objs {
		p := o.(*admissionregistrationv1.ValidatingAdmissionPolicy)
		if p.Generation <= p.Status.ObservedGeneration {
			continue
		}
		checker, err := typeChecker()
		if err != nil {
			return err
		}
		warnings := checker.Check(p)
		if err := c.Update(ctx, r, "", p.Name, "status", func(o runtime.Object) {
			cur := o.(*admissionregistrationv1.ValidatingAdmissionPolicy)
			cur.Status.ObservedGeneration = p.Generation
			cur.Status.TypeChecking = &admissionregistrationv1.TypeChecking{ExpressionWarnings: warnings}
		}); err != nil {
			return err
		}
	}
	return nil
}

// NewTypeChecker is kube's TypeChecker over the kinds of resources, typed by doc (an OpenAPI
// v2 document with kube's x-kubernetes-group-version-kind extensions).
func NewTypeChecker(doc []byte, resources []*registry.Resource) (*validating.TypeChecker, error) {
	var swagger spec.Swagger
	if err := json.Unmarshal(doc, &swagger); err != nil {
		return nil, err
	}
	res := &schemaResolver{defs: swagger.Definitions, byGVK: map[schema.GroupVersionKind]string{}}
	for name, d := range swagger.Definitions {
		for _, gvk := range gvksOf(d.Extensions) {
			res.byGVK[gvk] = name
		}
	}
	var gvs []schema.GroupVersion
	for _, r := range resources {
		gvs = append(gvs, r.GroupVersion)
	}
	mapper := meta.NewDefaultRESTMapper(gvs)
	for _, r := range resources {
		scope := meta.RESTScopeRoot
		if r.Namespaced {
			scope = meta.RESTScopeNamespace
		}
		mapper.AddSpecific(r.GroupVersion.WithKind(r.Kind), r.GroupVersionResource(), r.GroupVersion.WithResource(r.SingularName), scope)
	}
	return &validating.TypeChecker{SchemaResolver: res, RestMapper: mapper}, nil
}

type schemaResolver struct {
	defs  spec.Definitions
	byGVK map[schema.GroupVersionKind]string
}

func (s *schemaResolver) ResolveSchema(gvk schema.GroupVersionKind) (*spec.Schema, error) {
	name, ok := s.byGVK[gvk]
	if !ok {
		return nil, fmt.Errorf("cannot resolve %v: %w", gvk, resolver.ErrSchemaNotFound)
	}
	return resolver.PopulateRefs(func(ref string) (*spec.Schema, bool) {
		d, ok := s.defs[strings.TrimPrefix(ref, "#/definitions/")]
		return &d, ok
	}, "#/definitions/"+name)
}

func gvksOf(ext spec.Extensions) []schema.GroupVersionKind {
	raw, ok := ext["x-kubernetes-group-version-kind"]
	if !ok {
		return nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil
	}
	var list []struct{ Group, Version, Kind string }
	if json.Unmarshal(b, &list) != nil {
		return nil
	}
	out := make([]schema.GroupVersionKind, len(list))
	for i, g := range list {
		out[i] = schema.GroupVersionKind{Group: g.Group, Version: g.Version, Kind: g.Kind}
	}
	return out
}
