package apf

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/apichain/apichain/pkg/requestinfo"
	"github.com/apichain/apichain/pkg/user"
	"github.com/apichain/apichain/services/gateway/filters"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeuser "k8s.io/apiserver/pkg/authentication/user"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/storage"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"
	fcrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"
)

type storageStats = storage.Stats

// Filter is kube's priority-and-fairness filter: each request is classified by the
// FlowSchemas and waits in its priority level's queues for a seat (or is rejected with 429
// and Retry-After), and the response says which FlowSchema and priority level took it
// (X-Kubernetes-PF-FlowSchema-UID, X-Kubernetes-PF-PriorityLevel-UID). A watch holds its
// seat until it is established. Other long-running requests are not limited here; gRPC
// calls, which the HTTP layer cannot describe, are limited by the gRPC interceptors. The
// time a request may wait is a quarter of its deadline, at most a minute.
func (c *Controller) Filter(next http.Handler, defaultWait time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, ok := requestinfo.From(r.Context())
		u, uok := user.From(r.Context())
		if !ok || !uok {
			filters.WriteError(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "no request info or user found in context")
			return
		}
		watch := info.Verb == "watch"
		if filters.IsLongRunning(r) && !watch || filters.IsGRPC(r) { // gRPC: the interceptors queue it
			next.ServeHTTP(w, r)
			return
		}
		setHeaders := func(fs *flowcontrolv1.FlowSchema, pl *flowcontrolv1.PriorityLevelConfiguration) {
			w.Header().Set(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID, string(pl.UID))
			w.Header().Set(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID, string(fs.UID))
		}
		retryAfter, rejected := c.dispatch(r, info, u, watch, defaultWait, setHeaders, func(ctx context.Context) { next.ServeHTTP(w, r.WithContext(ctx)) })
		if rejected {
			w.Header().Set("Retry-After", strconv.FormatInt(retryAfter, 10))
			filters.WriteError(w, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests, tooManyRequests)
		}
	})
}

const tooManyRequests = "Too many requests, please try again later."

// dispatch classifies the request info describes, made by u, waits for a seat and runs serve
// in it (classified first learns the FlowSchema and priority level), or reports a
// rejection and how long to wait before retrying. A watch holds its seat until serve
// signals, through its context, that it is established. r carries what kube's work
// estimator reads (the list options in its query).
func (c *Controller) dispatch(r *http.Request, info *requestinfo.RequestInfo, u *user.User, watch bool, defaultWait time.Duration,
	classified func(*flowcontrolv1.FlowSchema, *flowcontrolv1.PriorityLevelConfiguration), serve func(context.Context)) (retryAfter int64, rejected bool) {
	kinfo := &apirequest.RequestInfo{IsResourceRequest: info.IsResourceRequest, Path: info.Path, Verb: info.Verb,
		APIPrefix: info.APIPrefix, APIGroup: info.APIGroup, APIVersion: info.APIVersion, Namespace: info.Namespace,
		Resource: info.Resource, Subresource: info.Subresource, Name: info.Name, Parts: info.Parts,
		FieldSelector: info.FieldSelector, LabelSelector: info.LabelSelector}
	r = r.WithContext(apirequest.WithRequestInfo(r.Context(), kinfo)) // the work estimator reads it
	digest := utilflowcontrol.RequestDigest{RequestInfo: kinfo,
		User: &kubeuser.DefaultInfo{Name: u.Name, UID: u.UID, Groups: u.Groups, Extra: u.Extra}}
	var fs *flowcontrolv1.FlowSchema
	var pl *flowcontrolv1.PriorityLevelConfiguration
	note := func(f *flowcontrolv1.FlowSchema, p *flowcontrolv1.PriorityLevelConfiguration, _ string) {
		fs, pl = f, p
	}
	estimate := func() fcrequest.WorkEstimate { return c.estimator(r, fs.Name, pl.Name) }
	waitCtx, cancel := waitContext(r.Context(), defaultWait)
	defer cancel()
	served := false
	if !watch {
		c.fc.Handle(waitCtx, digest, note, estimate, func(bool) {}, func() {
			served = true
			classified(fs, pl)
			serve(r.Context())
		})
	} else {
		served = c.serveWatch(waitCtx, digest, note, estimate, func() { classified(fs, pl) }, serve, r)
	}
	if served {
		return 0, false
	}
	plName := ""
	if fs != nil && pl != nil {
		classified(fs, pl)
		plName = pl.Name
	}
	c.dropped.RecordDroppedRequest(plName)
	return c.dropped.GetRetryAfter(plName), true
}

// serveWatch has the watch wait for a seat like any request, then serves it while Handle
// holds the seat until the watch is established (the proxy signals it), as kube does.
func (c *Controller) serveWatch(waitCtx context.Context, digest utilflowcontrol.RequestDigest,
	note func(*flowcontrolv1.FlowSchema, *flowcontrolv1.PriorityLevelConfiguration, string),
	estimate func() fcrequest.WorkEstimate, classified func(), serve func(context.Context), r *http.Request) bool {
	initialized := utilflowcontrol.NewInitializationSignal()
	start := make(chan struct{})
	done := make(chan any, 1)
	var forget utilflowcontrol.ForgetWatchFunc
	go func() {
		defer func() { done <- recover() }()
		c.fc.Handle(waitCtx, digest, note, estimate, func(bool) {}, func() {
			classified()
			forget = c.fc.RegisterWatch(r)
			close(start)
			initialized.Wait()
		})
	}()
	select {
	case <-start:
		func() {
			defer initialized.Signal()
			serve(utilflowcontrol.WithInitializationSignal(r.Context(), initialized))
		}()
		if p := <-done; p != nil {
			panic(p)
		}
		if forget != nil {
			forget()
		}
		return true
	case p := <-done:
		if p != nil {
			panic(fmt.Sprint(p))
		}
		return false
	}
}

// waitContext limits how long a request may wait in a queue: a quarter of the time left
// before its deadline (or of defaultWait), at most a minute.
func waitContext(ctx context.Context, defaultWait time.Duration) (context.Context, context.CancelFunc) {
	wait := defaultWait
	if deadline, ok := ctx.Deadline(); ok {
		wait = time.Until(deadline) / 4
	}
	if wait > time.Minute {
		wait = time.Minute
	}
	return context.WithTimeout(ctx, wait)
}

// WatchInitialized tells priority and fairness a watch is established: its seat is free.
func WatchInitialized(ctx context.Context) { utilflowcontrol.WatchInitialized(ctx) }
