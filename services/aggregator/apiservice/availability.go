package apiservice

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/apichain/apichain/pkg/apiregistration"
	"github.com/apichain/apichain/pkg/discovery"
	"github.com/apichain/apichain/pkg/healthz"
	"github.com/apichain/apichain/pkg/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The Available condition of a local APIService, kube's words.
const (
	reasonLocal  = "Local"
	messageLocal = "Local APIServices are always available"
)

// RunAvailability keeps the Available condition of the APIServices, on every change and every
// resync until ctx ends. A local one is always available, as in kube.
func RunAvailability(ctx context.Context, c *registry.Client, log *slog.Logger, resync time.Duration) {
	r, ok := c.Lookup(apiregistration.SchemeGroupVersion.WithResource("apiservices"))
	if !ok {
		return
	}
	c.Reconcile(ctx, r, resync, func(ctx context.Context) error {
		list, err := c.List(ctx, r, "", "")
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("APIService availability", "err", err)
			}
			return err
		}
		for _, o := range list {
			a := o.(*apiregistration.APIService)
			if a.Spec.Service != nil {
				continue // an aggregated server's availability is checked where it is proxied
			}
			want := apiregistration.APIServiceCondition{Type: apiregistration.Available, Status: apiregistration.ConditionTrue,
				Reason: reasonLocal, Message: messageLocal}
			if setCondition(a, want, time.Now()) {
				if err := c.ReplaceStatus(ctx, r, a); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
					log.Warn("APIService availability", "apiservice", a.Name, "err", err)
				}
			}
		}
		return nil
	})
}

// setCondition puts want in a's status and reports whether that changed anything; the
// transition time moves only when the status does.
func setCondition(a *apiregistration.APIService, want apiregistration.APIServiceCondition, now time.Time) bool {
	current := a.Status.AvailableCondition()
	if current == nil {
		want.LastTransitionTime = metav1.NewTime(now.Truncate(time.Second))
		a.Status.Conditions = append(a.Status.Conditions, want)
		return true
	}
	if current.Status == want.Status && current.Reason == want.Reason && current.Message == want.Message {
		return false
	}
	want.LastTransitionTime = current.LastTransitionTime
	if current.Status != want.Status {
		want.LastTransitionTime = metav1.NewTime(now.Truncate(time.Second))
	}
	*current = want
	return true
}

// Completion is kube's autoregister-completion check: it fails until every built-in
// APIService has been seen available once, so a new replica is not ready before discovery
// can list every local group/version.
func Completion(c *registry.Client) healthz.Checker {
	r, _ := c.Lookup(apiregistration.SchemeGroupVersion.WithResource("apiservices"))
	var mu sync.Mutex
	pending := map[string]bool{}
	for gv := range apiregistration.Builtin {
		pending[apiregistration.Name(gv)] = true
	}
	return healthz.NamedCheck("autoregister-completion", func(req *http.Request) error {
		mu.Lock()
		defer mu.Unlock()
		for name := range pending {
			o, err := c.Get(req.Context(), r, "", name)
			if err != nil {
				continue
			}
			if cond := o.(*apiregistration.APIService).Status.AvailableCondition(); cond != nil && cond.Status == apiregistration.ConditionTrue {
				delete(pending, name)
			}
		}
		if len(pending) > 0 {
			return fmt.Errorf("missing APIService: %v", slices.Sorted(maps.Keys(pending)))
		}
		return nil
	})
}

// RunProxied reports, on every change to APIServices and every minute, the group/versions of
// the remote ones (those with a service): the ones the aggregator proxies.
func RunProxied(ctx context.Context, c *registry.Client, log *slog.Logger, set func([]string)) {
	r, _ := c.Lookup(apiregistration.SchemeGroupVersion.WithResource("apiservices"))
	var last []string
	c.Reconcile(ctx, r, time.Minute, func(ctx context.Context) error {
		list, err := c.List(ctx, r, "", "")
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("proxied APIServices", "err", err)
			}
			return err
		}
		gvs := []string{}
		for _, o := range list {
			if a := o.(*apiregistration.APIService); a.Spec.Service != nil {
				gvs = append(gvs, discovery.GroupVersion(a.Spec.Group, a.Spec.Version))
			}
		}
		slices.Sort(gvs)
		if !slices.Equal(gvs, last) {
			set(gvs)
			last = gvs
		}
		return nil
	})
}
