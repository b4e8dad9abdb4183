package apf

import (
	"reflect"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	flowcontrolinformers "k8s.io/client-go/informers/flowcontrol"
	"k8s.io/client-go/informers/internalinterfaces"
	"k8s.io/client-go/kubernetes"
	flowcontrolclient "k8s.io/client-go/kubernetes/typed/flowcontrol/v1"
	"k8s.io/client-go/tools/cache"
)

// kube's flow-control library takes client-go's whole clientset and informer factory but
// uses only the flowcontrol group. These two give it just that group: linking client-go's
// clientset and factory for every group would add about 30 MB to the binaries.

// flowcontrolOnly is a kubernetes.Interface whose only group is flowcontrol/v1; the others
// are nil and never called.
type flowcontrolOnly struct {
	kubernetes.Interface
	fc flowcontrolclient.FlowcontrolV1Interface
}

func (c flowcontrolOnly) FlowcontrolV1() flowcontrolclient.FlowcontrolV1Interface { return c.fc }

// flowcontrolFactory is a shared informer factory that makes the flowcontrol informers.
type flowcontrolFactory struct {
	informers.SharedInformerFactory // nil: only Flowcontrol, Start and InformerFor are used
	client                          kubernetes.Interface

	mu        sync.Mutex
	informers map[reflect.Type]cache.SharedIndexInformer
	started   map[reflect.Type]bool
}

var _ internalinterfaces.SharedInformerFactory = (*flowcontrolFactory)(nil)

func newFlowcontrolFactory(client kubernetes.Interface) *flowcontrolFactory {
	return &flowcontrolFactory{client: client, informers: map[reflect.Type]cache.SharedIndexInformer{}, started: map[reflect.Type]bool{}}
}

func (f *flowcontrolFactory) Flowcontrol() flowcontrolinformers.Interface {
	return flowcontrolinformers.New(f, "", nil)
}

// InformerFor makes one informer per type, without resync, as client-go's factory does.
func (f *flowcontrolFactory) InformerFor(obj runtime.Object, newFunc internalinterfaces.NewInformerFunc) cache.SharedIndexInformer {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := reflect.TypeOf(obj)
	if inf, ok := f.informers[t]; ok {
		return inf
	}
	inf := newFunc(f.client, time.Duration(0))
	f.informers[t] = inf
	return inf
}

// Start runs the informers made so far until stop closes.
func (f *flowcontrolFactory) Start(stop <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for t, inf := range f.informers {
		if !f.started[t] {
			go inf.Run(stop)
			f.started[t] = true
		}
	}
}

// InformerName is nil: the informers are not named (client-go's default).
func (f *flowcontrolFactory) InformerName() *cache.InformerName { return nil }
