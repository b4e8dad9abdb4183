package serviceaccount

import (
	"context"
	"log/slog"
	"sync"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/informer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Reader reads through the chain: informers list and watch, a miss is a live get.
type Reader interface {
	informer.Reader
	Get(ctx context.Context, req *resourcev1.GetRequest) (*resourcev1.GetResponse, error)
}

type objectMeta = metav1.Object

type kind int

const (
	kindServiceAccount kind = iota
	kindPod
	kindSecret
)

var resources = [...]string{kindServiceAccount: "serviceaccounts", kindPod: "pods", kindSecret: "secrets"}

// Objects are the service accounts, pods and secrets tokens are bound to, as kube's token
// getter sees them: an informer's copy first (metadata only: no secret's data is held), a
// live read through core when the copy does not have the object yet.
type Objects struct {
	reader    Reader
	informers []*informer.Informer
}

// NewObjects follows the three resources through reader.
func NewObjects(reader Reader, log *slog.Logger) *Objects {
	o := &Objects{reader: reader}
	for _, r := range resources {
		o.informers = append(o.informers, informer.New(reader, resourceRef(r, "", ""),
			informer.DecoderOf[metav1.PartialObjectMetadata](), log, nil))
	}
	return o
}

func resourceRef(resource, namespace, name string) *resourcev1.ResourceRef {
	return &resourcev1.ResourceRef{Version: "v1", Resource: resource, Namespace: namespace, Name: name}
}

// Run keeps the copies current until ctx ends.
func (o *Objects) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, inf := range o.informers {
		wg.Go(func() { inf.Run(ctx) })
	}
	wg.Wait()
}

// get returns the object's metadata; an object that is not there is kube's NotFound.
func (o *Objects) get(ctx context.Context, k kind, namespace, name string) (objectMeta, error) {
	if obj, ok := o.informers[k].Get(namespace, name); ok {
		return obj, nil
	}
	meta := &metav1.PartialObjectMetadata{}
	if err := o.read(ctx, resources[k], namespace, name, meta); err != nil {
		return nil, err
	}
	return meta, nil
}

// read gets the object live from the chain into out (JSON).
func (o *Objects) read(ctx context.Context, resource, namespace, name string, out any) error {
	return informer.GetJSON(ctx, o.reader, resourceRef(resource, namespace, name), out)
}
