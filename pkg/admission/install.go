package admission

import (
	"context"

	"github.com/apichain/apichain/pkg/backend"
	"github.com/apichain/apichain/pkg/registry"
)

// Install gives h's writes webhook admission, with the webhook configurations and namespaces
// read through client (which may be another handler's: extensions reads core's objects). The
// backend is not ready before the configurations were read once, so no replica admits a
// request without the webhooks that apply to it.
func Install(b *backend.Backend, h *registry.Handler, client *registry.Client) error {
	w, err := NewWebhooks(Namespaces(client), b.Log)
	if err != nil {
		return err
	}
	h.SetAdmission(w)
	return b.Server.AddPostStartHook("admission-webhook-configurations-synced", func(ctx context.Context) error {
		synced := make(chan struct{})
		if err := w.Watch(ctx, client, func() { close(synced) }); err != nil {
			return err
		}
		select {
		case <-synced:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
}
