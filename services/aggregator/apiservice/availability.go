package apiservice

import (
	"context"
	"fmt"
	"github.com/apichain/apichain/pkg/controller"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/apichain/apichain/pkg/apiregistration"
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

// Remote checks a remote APIService and returns its Available condition.
type Remote func(ctx context.Context, a *apiregistration.APIService) apiregistration.APIServiceCondition

// RunAvailability keeps the Available condition of APIServices until ctx ends, on every
// change to them or to what triggers reports and every resync: without remote, of the local
// ones, always available as in kube; with it, of the remote ones, each checked on its own so a
// slow server delays no other. passed runs after each pass.
func RunAvailability(ctx context.Context, c *registry.Client, remote Remote, triggers []<-chan registry.Change, passed func(), log *slog.Logger, resync time.Duration) {
	r, ok := c.Lookup(apiregistration.SchemeGroupVersion.WithResource("apiservices"))
	if !ok {
		return
	}
	controller.Loop(ctx, resync, func(ctx context.Context) error {
		err := availabilityPass(ctx, c, r, remote, log)
		if err != nil && ctx.Err() == nil {
			log.Warn("APIService availability", "err", err)
		}
		if passed != nil {
			passed() // readiness may follow (autoregister-completion)
		}
		return err
	}, append(triggers, c.Watch(ctx, r))...)
}

func availabilityPass(ctx context.Context, c *registry.Client, r *registry.Resource, remote Remote, log *slog.Logger) error {
	list, err := c.List(ctx, r, "", "")
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	services := make([]*apiregistration.APIService, 0, len(list))
	for _, o := range list {
		a := o.(*apiregistration.APIService)
		services = append(services, a)
		switch {
		case a.Spec.Service == nil && remote == nil:
			wg.Go(func() {
				writeCondition(ctx, c, r, a, apiregistration.APIServiceCondition{Type: apiregistration.Available,
					Status: apiregistration.ConditionTrue, Reason: reasonLocal, Message: messageLocal}, log)
			})
		case a.Spec.Service != nil && remote != nil:
			wg.Go(func() { writeCondition(ctx, c, r, a, remote(ctx, a), log) })
		}
	}
	wg.Wait()
	gauge(services)
	return nil
}

// writeCondition stores want as a's Available condition if it changes anything.
func writeCondition(ctx context.Context, c *registry.Client, r *registry.Resource, a *apiregistration.APIService, want apiregistration.APIServiceCondition, log *slog.Logger) {
	wasAvailable := isAvailable(a)
	if !setCondition(a, want, time.Now()) {
		return
	}
	countUnavailable(wasAvailable, a)
	if err := c.ReplaceStatus(ctx, r, a); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) && ctx.Err() == nil {
		log.Warn("APIService availability", "apiservice", a.Name, "err", err)
	}
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
		if len(pending) > 0 {
			// One consistent read: the availability controller asks for this check right
			// after its writes, which a lagging cache might not show yet.
			list, err := c.List(req.Context(), r, "", "")
			if err != nil {
				return err
			}
			for _, o := range list {
				a := o.(*apiregistration.APIService)
				if cond := a.Status.AvailableCondition(); cond != nil && cond.Status == apiregistration.ConditionTrue {
					delete(pending, a.Name)
				}
			}
		}
		if len(pending) > 0 {
			return fmt.Errorf("missing APIService: %v", slices.Sorted(maps.Keys(pending)))
		}
		return nil
	})
}
