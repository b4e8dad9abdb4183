package authz

import (
	"context"
	"log/slog"
	"sync"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/informer"
	"github.com/apichain/apichain/pkg/rbac"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// rbacKinds are the four RBAC resources and how to read their objects.
var rbacKinds = []struct {
	resource string
	decode   informer.Decoder
}{
	{"clusterroles", informer.DecoderOf[rbacv1.ClusterRole]()},
	{"roles", informer.DecoderOf[rbacv1.Role]()},
	{"clusterrolebindings", informer.DecoderOf[rbacv1.ClusterRoleBinding]()},
	{"rolebindings", informer.DecoderOf[rbacv1.RoleBinding]()},
}

// Sync keeps an RBAC authorizer's policy in step with the cluster's RBAC objects: an
// informer per resource, and a new policy after every change once all four have listed, so
// a new binding takes effect at once on every gateway.
type Sync struct {
	rbac      *RBAC
	informers []*informer.Informer
	changed   chan struct{}
	synced    chan struct{}
	once      sync.Once
}

// NewSync feeds rbac from reader.
func NewSync(rbac *RBAC, reader informer.Reader, log *slog.Logger) *Sync {
	s := &Sync{rbac: rbac, changed: make(chan struct{}, 1), synced: make(chan struct{})}
	for _, k := range rbacKinds {
		ref := &resourcev1.ResourceRef{Group: rbacv1.GroupName, Version: "v1", Resource: k.resource}
		s.informers = append(s.informers, informer.New(reader, ref, k.decode, log, func(informer.Event) { s.notify() }))
	}
	return s
}

// Synced is closed once the first complete policy is in use.
func (s *Sync) Synced() <-chan struct{} { return s.synced }

// Run keeps the policy current until ctx ends.
func (s *Sync) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, inf := range s.informers {
		wg.Go(func() { inf.Run(ctx) })
	}
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case <-s.changed:
			s.rebuild()
		}
	}
}

func (s *Sync) notify() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// rebuild makes a new policy from the objects, once every resource has been listed.
func (s *Sync) rebuild() {
	var all []metav1.Object
	for _, inf := range s.informers {
		select {
		case <-inf.Synced():
		default:
			return
		}
		all = append(all, inf.List()...)
	}
	s.rbac.Set(rbac.PolicyOf(all))
	s.once.Do(func() { close(s.synced) })
}
