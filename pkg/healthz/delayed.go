package healthz

import (
	"net/http"
	"time"
)

// DelayedCheck wraps check so it passes without running until delay has
// elapsed from now (kube's --livez-grace-period), then runs check. This keeps
// a kubelet from restarting a server whose boot sequence is merely slow.
// now is the clock; nil means time.Now.
func DelayedCheck(check Checker, delay time.Duration, now func() time.Time) Checker {
	if now == nil {
		now = time.Now
	}
	return delayedCheck{check: check, start: now().Add(delay), now: now}
}

type delayedCheck struct {
	check Checker
	start time.Time
	now   func() time.Time
}

func (c delayedCheck) Name() string { return c.check.Name() }

// Check passes up to and including the instant start, like kube's
// clock.Now().After(startCheck).
func (c delayedCheck) Check(req *http.Request) error {
	if c.now().After(c.start) {
		return c.check.Check(req)
	}
	return nil
}
