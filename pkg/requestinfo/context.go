package requestinfo

import "context"

// contextKey is unexported so no other package can collide with it.
type contextKey struct{}

// WithRequestInfo returns a copy of ctx carrying info.
func WithRequestInfo(ctx context.Context, info *RequestInfo) context.Context {
	return context.WithValue(ctx, contextKey{}, info)
}

// From returns the RequestInfo stored by WithRequestInfo, if any.
func From(ctx context.Context) (*RequestInfo, bool) {
	info, ok := ctx.Value(contextKey{}).(*RequestInfo)
	return info, ok
}
