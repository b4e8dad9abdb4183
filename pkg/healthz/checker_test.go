package healthz

import (
	"errors"
	"net/http"
	"testing"
)

func TestNamedCheck(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name    string
		check   Checker
		wantNm  string
		wantErr error
	}{
		{"ping passes", PingHealthz, "ping", nil},
		{"named passes", NamedCheck("etcd", func(*http.Request) error { return nil }), "etcd", nil},
		{"named fails", NamedCheck("etcd", func(*http.Request) error { return boom }), "etcd", boom},
		{"name keeps slashes", NamedCheck("poststarthook/rbac/bootstrap-roles", func(*http.Request) error { return nil }), "poststarthook/rbac/bootstrap-roles", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.check.Name(); got != tt.wantNm {
				t.Errorf("Name() = %q, want %q", got, tt.wantNm)
			}
			if err := tt.check.Check(nil); !errors.Is(err, tt.wantErr) {
				t.Errorf("Check() = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func TestNamedCheckPassesRequest(t *testing.T) {
	want := &http.Request{Method: http.MethodGet}
	var got *http.Request
	c := NamedCheck("x", func(r *http.Request) error { got = r; return nil })
	_ = c.Check(want)
	if got != want {
		t.Errorf("check got request %p, want %p", got, want)
	}
}
