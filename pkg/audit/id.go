// Package audit holds what kube's auditing is keyed by: the audit ID every request gets at
// the gateway, which the backends receive with the request, so one request can be followed
// through every process's logs.
package audit

import "context"

// IDHeader is kube's audit ID header.
const IDHeader = "Audit-ID"

type idKey struct{}

// WithID stores the request's audit ID in ctx.
func WithID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, idKey{}, id)
}

// IDFrom returns the request's audit ID, or "".
func IDFrom(ctx context.Context) string {
	id, _ := ctx.Value(idKey{}).(string)
	return id
}
