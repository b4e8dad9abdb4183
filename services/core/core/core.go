// Package core is the core backend: /api/v1 and the built-in groups.
package core

import (
	"context"
	"log/slog"
	"time"

	discoveryv1 "github.com/apichain/apichain/gen/apichain/discovery/v1"
	"github.com/apichain/apichain/pkg/backend"
	"github.com/apichain/apichain/pkg/registry"
	"github.com/apichain/apichain/pkg/storage"
)

// Service is the service name in lifecycle state and logs.
const Service = "core"

// Served lists the group/versions and resources core owns, legacy group first.
func Served() []*discoveryv1.GroupVersion {
	return registry.NewSet(Resources()...).Served()
}

// New builds the core backend.
func New(opts *backend.Options, log *slog.Logger) (*backend.Backend, error) {
	b, err := backend.New(opts, Served(), log)
	if err != nil {
		return nil, err
	}
	return b, Setup(b)
}

// Setup installs core's resources and hooks on b.
func Setup(b *backend.Backend) error {
	scheme, err := NewScheme()
	if err != nil {
		return err
	}
	set := registry.NewSet(Resources()...)
	b.SetOpenAPI(set)
	h := registry.NewHandler(scheme, set, storage.NewStore(b.Etcd), b.Stopping())
	h.WarmUp()
	b.SetResources(h)
	if err := b.Server.AddPostStartHook("start-system-namespaces-controller", func(ctx context.Context) error {
		if err := storage.WaitReady(ctx, b.Etcd); err != nil {
			return err
		}
		return h.EnsureNamespaces(ctx, registry.SystemNamespaces)
	}); err != nil {
		return err
	}
	if err := b.Server.AddPostStartHook("start-namespace-lifecycle-controller", func(ctx context.Context) error {
		go h.RunNamespaceFinalizer(ctx, b.Log) // ctx lives until shutdown starts
		return nil
	}); err != nil {
		return err
	}
	if err := b.Server.AddPostStartHook("start-watch-cache", func(ctx context.Context) error {
		// Caches fill on first use and stop when shutdown starts, which moves watchers to
		// other replicas early.
		h.EnableWatchCache(ctx, b.Log)
		return nil
	}); err != nil {
		return err
	}
	return b.Server.AddPostStartHook("start-garbage-collector", func(ctx context.Context) error {
		go h.RunGarbageCollector(ctx, b.Log, 30*time.Second)
		return nil
	})
}
