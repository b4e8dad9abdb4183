package webhook

import (
	"cmp"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	lifecyclev1 "github.com/apichain/apichain/gen/apichain/lifecycle/v1"
	"k8s.io/apiserver/pkg/admission/plugin/webhook"
)

// A webhook whose calls fail breakerThreshold times in a row is not called for
// breakerCooldown: its requests get its failurePolicy's answer at once instead of waiting up
// to timeoutSeconds each. Then one request at a time probes it; the first success closes the
// breaker. kube has no such breaker: with failurePolicy Fail a dead webhook costs every
// matching request its full timeout there.
const (
	breakerThreshold = 5
	breakerCooldown  = 10 * time.Second
)

type breakers struct {
	mu       sync.Mutex
	m        map[string]*breaker
	now      func() time.Time
	onChange func() // after a webhook starts or stops failing, or fails again
}

type breaker struct {
	name, configuration string
	failures            int
	openUntil           time.Time // zero: closed
	probing             bool
	lastErr             string
}

func (b *breakers) init() {
	b.m = map[string]*breaker{}
	b.now = time.Now
	b.onChange = func() {}
}

// keep forgets the breakers of webhooks no longer configured.
func (b *breakers) keep(hooks []webhook.WebhookAccessor) {
	live := map[string]bool{}
	for _, h := range hooks {
		live[h.GetUID()] = true
	}
	b.mu.Lock()
	n := len(b.m)
	for uid := range b.m {
		if !live[uid] {
			delete(b.m, uid)
		}
	}
	changed := len(b.m) != n
	b.mu.Unlock()
	if changed {
		b.onChange()
	}
}

// allow says whether a call to the webhook may go out now.
func (b *breakers) allow(uid string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	br := b.m[uid]
	if br == nil || br.openUntil.IsZero() {
		return nil
	}
	if b.now().Before(br.openUntil) || br.probing {
		return fmt.Errorf("not called: %d calls in a row failed, the last with: %s", br.failures, br.lastErr)
	}
	br.probing = true
	return nil
}

// record notes a call's outcome: failed is a failure to call the webhook or to understand
// its answer (not a rejection).
func (b *breakers) record(h webhook.WebhookAccessor, err error, log *slog.Logger) {
	if b.update(h, err, log) {
		b.onChange()
	}
}

func (b *breakers) update(h webhook.WebhookAccessor, err error, log *slog.Logger) (changed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	uid := h.GetUID()
	br := b.m[uid]
	if err == nil {
		if br == nil {
			return false
		}
		if !br.openUntil.IsZero() {
			log.Info("webhook answers again", "webhook", h.GetName())
		}
		delete(b.m, uid)
		return true
	}
	if br == nil {
		br = &breaker{name: h.GetName(), configuration: configurationOf(h)}
		b.m[uid] = br
	}
	br.failures++
	br.lastErr = err.Error()
	br.probing = false
	if br.failures >= breakerThreshold {
		if br.openUntil.IsZero() {
			log.Warn("webhook keeps failing: its failurePolicy answers without calling it for a while", "webhook", h.GetName(),
				"failures", br.failures, "cooldown", breakerCooldown, "err", err)
		}
		br.openUntil = b.now().Add(breakerCooldown)
	}
	return true
}

func configurationOf(h webhook.WebhookAccessor) string {
	if h.GetType() == "admit" {
		return "MutatingWebhookConfiguration/" + h.GetConfigurationName()
	}
	return "ValidatingWebhookConfiguration/" + h.GetConfigurationName()
}

// release ends a probe that said nothing of the webhook (the request was canceled).
func (b *breakers) release(uid string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if br := b.m[uid]; br != nil {
		br.probing = false
	}
}

// Failing lists the webhooks whose last calls failed, by name.
func (w *Webhooks) Failing() []*lifecyclev1.FailingWebhook {
	b := &w.breakers
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]*lifecyclev1.FailingWebhook, 0, len(b.m))
	for _, br := range b.m {
		out = append(out, &lifecyclev1.FailingWebhook{Name: br.name, Configuration: br.configuration,
			Failures: int32(br.failures), LastError: br.lastErr, Open: !br.openUntil.IsZero()})
	}
	slices.SortFunc(out, func(x, y *lifecyclev1.FailingWebhook) int {
		return cmp.Or(cmp.Compare(x.Configuration, y.Configuration), cmp.Compare(x.Name, y.Name))
	})
	return out
}

// OnFailingChange sets what to do when Failing changes (the list or a count).
func (w *Webhooks) OnFailingChange(f func()) { w.breakers.onChange = f }
