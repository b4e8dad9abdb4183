// Package openapi builds the OpenAPI documents a Kubernetes-compatible API
// server publishes for the built-in kinds it serves, by reflection over the
// k8s.io/api Go types:
//
//   - V3 builds the OpenAPI 3.0 document of one group/version, served at
//     /openapi/v3/api/v1 or /openapi/v3/apis/<group>/<version>;
//   - V3Index builds the /openapi/v3 discovery document naming those
//     documents with their content hashes;
//   - V2 builds the swagger 2.0 document of every kind, served at
//     /openapi/v2, and V2Protobuf its protobuf form (what kubectl asks for).
//
// The schemas follow what kube's openapi-gen publishes for the same types:
// definitions named after the Go package (io.k8s.api.core.v1.ConfigMap),
// $ref between them (wrapped in allOf in v3 when the property has its own
// description or default), descriptions from the types' SwaggerDoc methods,
// x-kubernetes-patch-strategy / x-kubernetes-patch-merge-key from the
// patchStrategy / patchMergeKey struct tags, x-kubernetes-list-type,
// x-kubernetes-list-map-keys, x-kubernetes-map-type, enums and the required
// fields that only comments tell (from zz_generated.tags.go, made by
// internal/gentags), custom schemas of the types that implement
// OpenAPISchemaType (metav1.Time, resource.Quantity, intstr.IntOrString) and
// x-kubernetes-group-version-kind on every kind and list. Operations carry
// x-kubernetes-action and x-kubernetes-group-version-kind, and their
// parameters come from the metav1 option types (ListOptions, CreateOptions,
// PatchOptions, ...), so kubectl sees that PATCH takes fieldValidation.
//
// What kubectl 1.32 does with them:
//
//   - create -f / apply -f / replace -f (--validate=strict, the default) read
//     /openapi/v3, then the document of the object's group/version, and look
//     for a PATCH operation with the object's x-kubernetes-group-version-kind
//     that takes a fieldValidation query parameter. Finding it, kubectl sends
//     fieldValidation=Strict and lets the server reject unknown or duplicate
//     fields (no client-side schema check). Not finding it, kubectl falls back
//     to checking the object itself against /openapi/v2 (protobuf).
//   - apply computes its strategic merge patch from the v3 schema of the kind
//     (x-kubernetes-patch-merge-key / -strategy), falling back to v2.
//   - explain renders the v3 document: it finds the kind from the paths'
//     x-kubernetes-group-version-kind, then walks properties, $ref and allOf.
//
// generate the comment-tag tables with:
//
//go:generate go run ./internal/gentags -o zz_generated.tags.go
package openapi
