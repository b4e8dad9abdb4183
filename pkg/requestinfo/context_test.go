package requestinfo

import (
	"context"
	"testing"
)

func TestContextRoundTrip(t *testing.T) {
	if info, ok := From(context.Background()); ok || info != nil {
		t.Fatalf("empty context: got %v, %v", info, ok)
	}
	want := &RequestInfo{IsResourceRequest: true, Verb: "get", Resource: "pods"}
	ctx := WithRequestInfo(context.Background(), want)
	got, ok := From(ctx)
	if !ok || got != want {
		t.Fatalf("got %p, %v; want %p", got, ok, want)
	}
	// A derived context still carries it; an unrelated string key does not clash.
	ctx = context.WithValue(ctx, "requestInfo", "other")
	if got, ok := From(ctx); !ok || got != want {
		t.Fatalf("derived context: got %v, %v", got, ok)
	}
	// A stored nil pointer is found, as nil.
	if got, ok := From(WithRequestInfo(context.Background(), nil)); !ok || got != nil {
		t.Fatalf("nil info: got %v, %v", got, ok)
	}
}
