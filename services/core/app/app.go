// Package app assembles the core backend: /api/v1 and the built-in groups on etcd, with
// the controllers a bare kube-apiserver runs (namespace lifecycle, garbage collection) and
// those of kube-controller-manager that users cannot do without (cluster role aggregation,
// default service accounts and the root CA ConfigMap, resource quota usage, type checking of
// validating admission policies).
package app

import (
	"context"
	"time"

	discoveryv1 "github.com/apichain/apichain/gen/apichain/discovery/v1"
	lifecyclev1 "github.com/apichain/apichain/gen/apichain/lifecycle/v1"
	"github.com/apichain/apichain/pkg/admission"
	"github.com/apichain/apichain/pkg/backend"
	"github.com/apichain/apichain/pkg/controller"
	"github.com/apichain/apichain/pkg/controller/clusterroleaggregation"
	"github.com/apichain/apichain/pkg/controller/garbagecollector"
	"github.com/apichain/apichain/pkg/controller/podgc"
	"github.com/apichain/apichain/pkg/controller/policystatus"
	"github.com/apichain/apichain/pkg/controller/resourcequota"
	"github.com/apichain/apichain/pkg/controller/serviceaccount"
	"github.com/apichain/apichain/pkg/controller/volumeprotection"
	"github.com/apichain/apichain/pkg/lifecycle"
	"github.com/apichain/apichain/pkg/registry"
	"github.com/apichain/apichain/pkg/storage"
	"github.com/apichain/apichain/pkg/topology"
	"github.com/apichain/apichain/services/core/bootstrap"
	"github.com/apichain/apichain/services/core/builtin"
	"github.com/apichain/apichain/services/core/builtin/defaulting"
	"github.com/apichain/apichain/services/core/builtin/rbac"
	"github.com/apichain/apichain/services/core/builtin/scheduling"
	"github.com/apichain/apichain/services/core/builtin/validate"
	"github.com/apichain/apichain/services/core/servicenet"
	"github.com/spf13/pflag"
	schedulingv1 "k8s.io/api/scheduling/v1"
)

// Options are core's own settings (its flags); each instance of the service has its own.
type Options struct {
	// Network are the service network flags (--service-cluster-ip-range, --service-node-port-range).
	Network         *servicenet.Options
	AllowPrivileged bool
	// KubernetesServicePort is the default/kubernetes Service's target port: the gateway's
	// secure port (the all-in-one sets it).
	KubernetesServicePort int32
}

// NewOptions are core's defaults.
func NewOptions() *Options {
	return &Options{Network: servicenet.NewOptions(), KubernetesServicePort: 6443}
}

// Service is the core backend configured by o: what it serves and how it is set up.
func (o *Options) Service() backend.Service {
	return backend.Service{Name: topology.Core, Served: Served, Setup: o.setup, Flags: func(fs *pflag.FlagSet) {
		o.Network.AddFlags(fs)
		fs.BoolVar(&o.AllowPrivileged, "allow-privileged", false, "If true, allow privileged containers.")
	}}
}

// Served lists the group/versions and resources core owns, legacy group first.
func Served() []*discoveryv1.GroupVersion {
	return registry.NewSet(builtin.Resources(builtin.Options{})...).Served()
}

// Stored are the resources this service keeps in etcd (the storage layout migration moves
// their objects).
func Stored() []*registry.Resource { return builtin.Resources(builtin.Options{}) }

// setup installs core's resources, admission and post-start hooks on b.
func (o *Options) setup(b *backend.Backend) error {
	scheme, err := builtin.NewScheme()
	if err != nil {
		return err
	}
	validate.AllowPrivileged(o.AllowPrivileged)
	network, err := o.Network.Parse()
	if err != nil {
		return err
	}
	alloc := servicenet.NewAllocator(network)
	escalation := &rbac.Escalation{}
	set := registry.NewSet(builtin.Resources(builtin.Options{Escalation: escalation, Etcd: b.Etcd, Services: alloc})...)
	h, err := b.InstallRegistry(scheme, set)
	if err != nil {
		return err
	}
	b.ClaimKeys(servicenet.NodePortKeys)
	client := registry.NewClient(h) // what the controllers read and write through
	escalation.Policy = rbac.PolicyFrom(client)
	if err := alloc.Bind(client, b.Store()); err != nil {
		return err
	}
	if err := admission.Install(b, h, client, client); err != nil {
		return err
	}
	ca, err := b.ClientCA()
	if err != nil {
		return err
	}
	systemNamespaces := func(ctx context.Context) error { return h.EnsureNamespaces(ctx, registry.SystemNamespaces) }
	// The gateways are the API servers: their published addresses are the default/kubernetes
	// endpoints, reconciled every 10 s (kube's interval) and when a gateway comes, goes or
	// starts shutting down.
	gateways := b.Instances()
	gatewaysChanged := make(chan struct{}, 1)
	gateways.OnChange(func() {
		select {
		case gatewaysChanged <- struct{}{}:
		default:
		}
	})
	// kube-apiserver's post-start hooks that core has, by kube's names. Those that write
	// bootstrap objects wait for etcd first; controllers run in the background.
	hooks := []hook{
		// As kube's controller: now, and every minute, recreate any that went missing (the
		// bootstrap hooks below make them before core is ready).
		{"start-system-namespaces-controller", afterEtcd(b, background(func(ctx context.Context) {
			controller.Loop[struct{}](ctx, time.Minute, func(ctx context.Context) error {
				err := systemNamespaces(ctx)
				if err != nil && ctx.Err() == nil {
					b.Log.Warn("system namespaces", "err", err)
				}
				return err
			})
		}))},
		{"bootstrap-controller", afterEtcd(b, func(ctx context.Context) error {
			if err := systemNamespaces(ctx); err != nil {
				return err
			}
			if err := alloc.EnsureDefaults(ctx, o.KubernetesServicePort); err != nil {
				return err
			}
			go alloc.Repair(ctx, b.Log, 3*time.Minute)
			go servicenet.NewEndpointAddresses(client, func() []string { return gatewayAddresses(gateways) }).Run(ctx, gatewaysChanged, 10*time.Second, b.Log)
			return nil
		})},
		// The default roles include some in kube-system and kube-public.
		{"rbac/bootstrap-roles", afterEtcd(b, func(ctx context.Context) error { return bootstrap.Ensure(ctx, client, systemNamespaces) })},
		{"scheduling/bootstrap-system-priority-classes", afterEtcd(b, func(ctx context.Context) error {
			return bootstrap.EnsureObjects(ctx, client, schedulingv1.SchemeGroupVersion.WithResource("priorityclasses"), scheduling.SystemPriorityClasses())
		})},
		{"priority-and-fairness-config-producer", func(ctx context.Context) error {
			return bootstrap.EnsureFlowControl(ctx, client, b.Log, defaulting.Set)
		}},
	}
	// kube-controller-manager's controllers, those --controllers selects.
	on := b.Controllers().Enabled
	publishedCA := ca
	if !on(controller.RootCACertPublisher) {
		publishedCA = nil
	}
	for _, c := range []struct {
		hook string
		on   bool
		run  func(ctx context.Context)
	}{
		{"start-clusterrole-aggregation-controller", on(controller.ClusterRoleAggregation),
			func(ctx context.Context) { clusterroleaggregation.Run(ctx, client, b.Log, 5*time.Minute) }},
		{"start-serviceaccount-controller", on(controller.ServiceAccount) || publishedCA != nil,
			func(ctx context.Context) {
				serviceaccount.Run(ctx, client, on(controller.ServiceAccount), publishedCA, b.Log, 30*time.Second)
			}},
		{"start-volume-protection-controllers", on(controller.PVCProtection) || on(controller.PVProtection),
			func(ctx context.Context) { volumeprotection.Run(ctx, client, b.Log, 30*time.Second) }},
		{"start-pod-gc-controller", on(controller.PodGarbageCollector),
			func(ctx context.Context) { podgc.Run(ctx, client, b.Log, 20*time.Second, podgc.Quarantine) }},
		{"start-resourcequota-controller", on(controller.ResourceQuota),
			func(ctx context.Context) { resourcequota.Run(ctx, client, b.Log, 30*time.Second) }},
		{"start-garbage-collector", on(controller.GarbageCollector),
			func(ctx context.Context) { garbagecollector.Run(ctx, client, b.Log, 30*time.Second) }},
		{"start-validatingadmissionpolicy-status-controller", on(controller.ValidatingPolicyStatus),
			func(ctx context.Context) { policystatus.Run(ctx, client, set.OpenAPIV2, b.Log, 5*time.Minute) }},
	} {
		if c.on {
			hooks = append(hooks, hook{c.hook, background(c.run)})
		}
	}
	for _, hook := range hooks {
		if err := b.Server.AddPostStartHook(hook.name, hook.run); err != nil {
			return err
		}
	}
	return nil
}

// hook is a named post-start hook.
type hook struct {
	name string
	run  func(ctx context.Context) error
}

// background is a hook that starts run and returns: a controller, which runs until the
// hook's context ends.
func background(run func(ctx context.Context)) func(context.Context) error {
	return func(ctx context.Context) error {
		go run(ctx)
		return nil
	}
}

// afterEtcd is a hook that runs hook once etcd answers (a bootstrap write).
func afterEtcd(b *backend.Backend, hook func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := storage.WaitReady(ctx, b.Etcd); err != nil {
			return err
		}
		return hook(ctx)
	}
}

// gatewayAddresses are the addresses of the gateways that listen and are not shutting down.
func gatewayAddresses(reg *lifecycle.Registry) []string {
	var out []string
	for _, st := range reg.Service(topology.Gateway) {
		if s := st.GetState(); s == lifecyclev1.State_STATE_STARTING || s == lifecyclev1.State_STATE_RUNNING {
			out = append(out, st.GetAddress())
		}
	}
	return out
}
