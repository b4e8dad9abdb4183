// Package apf is API Priority and Fairness in the gateway, as kube-apiserver's: kube's
// flow-control library (k8s.io/apiserver/pkg/util/flowcontrol: classification by FlowSchema,
// shuffle-sharded fair queuing per priority level with seats, borrowing between levels, the
// apiserver_flowcontrol_* metrics and the debug dumps), fed by informers on the gateway's own
// API through an in-process loopback client, and a filter in the chain that replaces
// max-in-flight. Each gateway replica has its own queues and concurrency, as each
// kube-apiserver does.
package apf

import (
	"context"
	"net/http"

	"k8s.io/apiserver/pkg/server/mux"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"
	fcmetrics "k8s.io/apiserver/pkg/util/flowcontrol/metrics"
	fcrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"
	flowcontrolclient "k8s.io/client-go/kubernetes/typed/flowcontrol/v1"
	"k8s.io/client-go/rest"
)

// Controller is one gateway's priority and fairness.
type Controller struct {
	fc        utilflowcontrol.Interface
	factory   *flowcontrolFactory
	estimator fcrequest.WorkEstimatorFunc
	dropped   utilflowcontrol.DroppedRequestsTracker
	debug     *mux.PathRecorderMux
}

// New builds priority and fairness with serverConcurrencyLimit seats (kube: the sum of
// --max-requests-inflight and --max-mutating-requests-inflight), reading its configuration
// through loopback.
func New(serverConcurrencyLimit int, loopback *rest.Config) (*Controller, error) {
	fcmetrics.Register()
	c := &Controller{dropped: utilflowcontrol.NewDroppedRequestsTracker()}
	fc, err := flowcontrolclient.NewForConfig(loopback)
	if err != nil {
		return nil, err
	}
	c.factory = newFlowcontrolFactory(flowcontrolOnly{fc: fc})
	c.fc = utilflowcontrol.New(c.factory, fc, serverConcurrencyLimit)
	// The gateway keeps no object counts: lists cost the minimum seats unless a limit or a
	// selector says more (kube counts objects in its storage).
	c.estimator = fcrequest.NewWorkEstimator(func(string) (storageStats, error) { return storageStats{}, fcrequest.ObjectCountNotFoundErr },
		c.fc.GetInterestedWatchCount, fcrequest.DefaultWorkEstimatorConfig(), c.fc.GetMaxSeats)
	c.debug = mux.NewPathRecorderMux("apf-debug")
	c.fc.Install(c.debug)
	return c, nil
}

// Debug serves /debug/api_priority_and_fairness/dump_{priority_levels,queues,requests}.
func (c *Controller) Debug() http.Handler { return c.debug }

// Run starts the informers and the configuration controller until ctx ends (kube's
// priority-and-fairness-config-consumer).
func (c *Controller) Run(ctx context.Context) {
	c.factory.Start(ctx.Done())
	go func() { _ = c.fc.Run(ctx.Done()) }()
}
