package admission

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

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
	mu  sync.Mutex
	m   map[string]*breaker
	now func() time.Time
}

type breaker struct {
	failures  int
	openUntil time.Time // zero: closed
	probing   bool
	lastErr   string
}

func (b *breakers) init() {
	b.m = map[string]*breaker{}
	b.now = time.Now
}

// keep forgets the breakers of webhooks no longer configured.
func (b *breakers) keep(hooks []webhook.WebhookAccessor) {
	live := map[string]bool{}
	for _, h := range hooks {
		live[h.GetUID()] = true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for uid := range b.m {
		if !live[uid] {
			delete(b.m, uid)
		}
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
func (b *breakers) record(uid, name string, err error, log *slog.Logger) {
	b.mu.Lock()
	defer b.mu.Unlock()
	br := b.m[uid]
	if err == nil {
		if br != nil && !br.openUntil.IsZero() {
			log.Info("webhook answers again", "webhook", name)
		}
		delete(b.m, uid)
		return
	}
	if br == nil {
		br = &breaker{}
		b.m[uid] = br
	}
	br.failures++
	br.lastErr = err.Error()
	br.probing = false
	if br.failures >= breakerThreshold {
		if br.openUntil.IsZero() {
			log.Warn("webhook keeps failing: its failurePolicy answers without calling it for a while", "webhook", name,
				"failures", br.failures, "cooldown", breakerCooldown, "err", err)
		}
		br.openUntil = b.now().Add(breakerCooldown)
	}
}

// release ends a probe that said nothing of the webhook (the request was canceled).
func (b *breakers) release(uid string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if br := b.m[uid]; br != nil {
		br.probing = false
	}
}

// Failing lists the webhooks whose last calls failed, with the last error.
func (w *Webhooks) Failing() map[string]string {
	out := map[string]string{}
	w.breakers.mu.Lock()
	defer w.breakers.mu.Unlock()
	for uid, br := range w.breakers.m {
		out[uid] = fmt.Sprintf("%d failed calls in a row, the last: %s", br.failures, br.lastErr)
	}
	return out
}
