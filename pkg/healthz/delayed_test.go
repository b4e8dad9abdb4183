package healthz

import (
	"net/http"
	"testing"
	"time"
)

func TestDelayedCheck(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	const grace = 10 * time.Second
	tests := []struct {
		name    string
		elapsed time.Duration
		inner   Checker
		wantErr bool
	}{
		{"failing check passes at start", 0, failCheck("etcd", "down"), false},
		{"failing check passes inside grace", grace - time.Nanosecond, failCheck("etcd", "down"), false},
		{"failing check passes at the exact deadline", grace, failCheck("etcd", "down"), false},
		{"failing check fails after grace", grace + time.Nanosecond, failCheck("etcd", "down"), true},
		{"passing check passes after grace", time.Hour, okCheck("etcd"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := t0
			c := DelayedCheck(tt.inner, grace, func() time.Time { return now })
			if c.Name() != tt.inner.Name() {
				t.Errorf("Name() = %q, want %q", c.Name(), tt.inner.Name())
			}
			now = t0.Add(tt.elapsed)
			if err := c.Check(nil); (err != nil) != tt.wantErr {
				t.Errorf("Check() = %v, wantErr %v", err, tt.wantErr)
			}
		})
	}
}

// The inner check must not run at all during the grace period: boot-time
// checks may be slow or not yet safe to call.
func TestDelayedCheckSkipsInnerDuringGrace(t *testing.T) {
	t0 := time.Unix(0, 0)
	now := t0
	calls := 0
	inner := NamedCheck("x", func(*http.Request) error { calls++; return nil })
	c := DelayedCheck(inner, time.Minute, func() time.Time { return now })
	_ = c.Check(nil)
	if calls != 0 {
		t.Fatalf("inner ran %d times during grace", calls)
	}
	now = t0.Add(2 * time.Minute)
	_ = c.Check(nil)
	if calls != 1 {
		t.Fatalf("inner ran %d times after grace, want 1", calls)
	}
}

func TestDelayedCheckNilClockUsesTimeNow(t *testing.T) {
	c := DelayedCheck(failCheck("x", "down"), time.Hour, nil)
	if err := c.Check(nil); err != nil {
		t.Fatalf("Check() = %v, want nil inside an hour's grace", err)
	}
	c = DelayedCheck(failCheck("x", "down"), -time.Second, nil)
	if err := c.Check(nil); err == nil {
		t.Fatal("Check() = nil, want error once the (negative) grace is over")
	}
}

func TestDelayedCheckThroughLivez(t *testing.T) {
	t0 := time.Unix(0, 0)
	now := t0
	h := Handler("livez", fixed(PingHealthz, DelayedCheck(failCheck("etcd", "down"), time.Minute, func() time.Time { return now })))
	if w := serve(h, "GET", "/livez", ""); w.Code != 200 {
		t.Fatalf("inside grace: %d %q", w.Code, w.Body)
	}
	now = t0.Add(time.Minute + time.Second)
	w := serve(h, "GET", "/livez", "")
	if want := "[+]ping ok\n[-]etcd failed: reason withheld\nlivez check failed\n"; w.Code != 500 || w.Body.String() != want {
		t.Fatalf("after grace: %d %q, want 500 %q", w.Code, w.Body, want)
	}
}
