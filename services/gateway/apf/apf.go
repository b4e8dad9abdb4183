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
	"crypto/rand"
	"encoding/hex"
	"net/http"

	"github.com/apichain/apichain/pkg/user"
	"k8s.io/apiserver/pkg/server/mux"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"
	fcmetrics "k8s.io/apiserver/pkg/util/flowcontrol/metrics"
	fcrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"
	flowcontrolclient "k8s.io/client-go/kubernetes/typed/flowcontrol/v1"
	"k8s.io/client-go/rest"
)

// LoopbackUser is the identity of the gateway's own client (kube's loopback user).
var LoopbackUser = &user.User{Name: "system:apiserver", Groups: []string{user.SystemPrivilegedGroup, user.AllAuthenticated}}

// Controller is one gateway's priority and fairness.
type Controller struct {
	fc        utilflowcontrol.Interface
	factory   *flowcontrolFactory
	loopback  *loopback
	token     string
	estimator fcrequest.WorkEstimatorFunc
	dropped   utilflowcontrol.DroppedRequestsTracker
	debug     *mux.PathRecorderMux
}

// New builds priority and fairness with serverConcurrencyLimit seats (kube: the sum of
// --max-requests-inflight and --max-mutating-requests-inflight).
func New(serverConcurrencyLimit int) (*Controller, error) {
	fcmetrics.Register()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	c := &Controller{loopback: &loopback{}, token: hex.EncodeToString(b), dropped: utilflowcontrol.NewDroppedRequestsTracker()}
	uid := make([]byte, 16)
	_, _ = rand.Read(uid)
	LoopbackUser.UID = hex.EncodeToString(uid)
	fc, err := flowcontrolclient.NewForConfig(&rest.Config{Host: "https://loopback.apichain.invalid", BearerToken: c.token,
		Transport: c.loopback, UserAgent: "apichain-gateway/loopback", QPS: -1})
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

// LoopbackToken is the bearer token of the loopback client, to authenticate as LoopbackUser.
func (c *Controller) LoopbackToken() string { return c.token }

// Serve sets the handler loopback requests go through (the gateway's whole chain).
func (c *Controller) Serve(h http.Handler) { c.loopback.handler.Store(&h) }

// Debug serves /debug/api_priority_and_fairness/dump_{priority_levels,queues,requests}.
func (c *Controller) Debug() http.Handler { return c.debug }

// Run starts the informers and the configuration controller until ctx ends (kube's
// priority-and-fairness-config-consumer).
func (c *Controller) Run(ctx context.Context) {
	c.factory.Start(ctx.Done())
	go func() { _ = c.fc.Run(ctx.Done()) }()
}
