package healthz

import (
	"errors"
	"testing"
)

func TestSignalCheck(t *testing.T) {
	shuttingDown := errors.New("process is shutting down")
	tests := []struct {
		name    string
		closeCh bool
		err     error
		wantErr bool
		wantMsg string
	}{
		{name: "open channel passes", err: shuttingDown},
		{name: "closed channel fails with err", closeCh: true, err: shuttingDown, wantErr: true, wantMsg: "process is shutting down"},
		{name: "nil err still fails once closed", closeCh: true, wantErr: true, wantMsg: "shutdown signaled"},
		{name: "nil err passes while open"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch := make(chan struct{})
			c := SignalCheck("shutdown", ch, tt.err)
			if c.Name() != "shutdown" {
				t.Errorf("Name() = %q, want shutdown", c.Name())
			}
			if tt.closeCh {
				close(ch)
			}
			err := c.Check(nil)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Check() = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil && err.Error() != tt.wantMsg {
				t.Errorf("Check() = %q, want %q", err, tt.wantMsg)
			}
		})
	}
}

// The same check flips from passing to failing when the channel closes,
// which is how readyz reports a graceful shutdown.
func TestSignalCheckThroughHandler(t *testing.T) {
	ch := make(chan struct{})
	h := Handler("readyz", fixed(PingHealthz, SignalCheck("shutdown", ch, errors.New("process is shutting down"))))

	if w := serve(h, "GET", "/readyz", ""); w.Code != 200 || w.Body.String() != "ok" {
		t.Fatalf("before close: %d %q", w.Code, w.Body)
	}
	close(ch)
	steps := []struct {
		path, wantBody string
	}{
		{"/readyz", "[+]ping ok\n[-]shutdown failed: reason withheld\nreadyz check failed\n"},
		{"/readyz/shutdown", "internal server error: process is shutting down\n"},
	}
	for _, s := range steps {
		w := serve(h, "GET", s.path, "")
		if w.Code != 500 || w.Body.String() != s.wantBody {
			t.Errorf("after close %s: %d %q, want 500 %q", s.path, w.Code, w.Body, s.wantBody)
		}
	}
}
