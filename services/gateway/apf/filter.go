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
// seat until it is established. Other long-running requests are not limited. The time a
// request may wait is a quarter of its deadline, at most a minute.
func (c *Controller) Filter(next http.Handler, defaultWait time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, ok := requestinfo.From(r.Context())
		u, uok := user.From(r.Context())
		if !ok || !uok {
			filters.WriteError(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "no request info or user found in context")
			return
		}
		watch := info.Verb == "watch"
		if filters.IsLongRunning(r) && !watch {
			next.ServeHTTP(w, r)
			return
		}
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
		setHeaders := func() {
			if fs != nil && pl != nil {
				w.Header().Set(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID, string(pl.UID))
				w.Header().Set(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID, string(fs.UID))
			}
		}
		estimate := func() fcrequest.WorkEstimate { return c.estimator(r, fs.Name, pl.Name) }
		waitCtx, cancel := waitContext(r.Context(), defaultWait)
		defer cancel()

		served := false
		if !watch {
			c.fc.Handle(waitCtx, digest, note, estimate, func(bool) {}, func() {
				served = true
				setHeaders()
				next.ServeHTTP(w, r)
			})
		} else {
			served = c.serveWatch(waitCtx, digest, note, estimate, setHeaders, next, w, r)
		}
		if served {
			return
		}
		setHeaders()
		plName := ""
		if pl != nil {
			plName = pl.Name
		}
		c.dropped.RecordDroppedRequest(plName)
		w.Header().Set("Retry-After", strconv.FormatInt(c.dropped.GetRetryAfter(plName), 10))
		filters.WriteError(w, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests, "Too many requests, please try again later.")
	})
}

// serveWatch has the watch wait for a seat like any request, then serves it while Handle
// holds the seat until the watch is established (the proxy signals it), as kube does.
func (c *Controller) serveWatch(waitCtx context.Context, digest utilflowcontrol.RequestDigest,
	note func(*flowcontrolv1.FlowSchema, *flowcontrolv1.PriorityLevelConfiguration, string),
	estimate func() fcrequest.WorkEstimate, setHeaders func(), next http.Handler, w http.ResponseWriter, r *http.Request) bool {
	initialized := utilflowcontrol.NewInitializationSignal()
	start := make(chan struct{})
	done := make(chan any, 1)
	var forget utilflowcontrol.ForgetWatchFunc
	go func() {
		defer func() { done <- recover() }()
		c.fc.Handle(waitCtx, digest, note, estimate, func(bool) {}, func() {
			setHeaders()
			forget = c.fc.RegisterWatch(r)
			close(start)
			initialized.Wait()
		})
	}()
	select {
	case <-start:
		func() {
			defer initialized.Signal()
			next.ServeHTTP(w, r.WithContext(utilflowcontrol.WithInitializationSignal(r.Context(), initialized)))
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
