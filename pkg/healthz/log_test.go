package healthz

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// withLog captures the default slog logger's output at debug level.
func withLog(t *testing.T) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() { slog.SetDefault(prev) })
	return &buf
}

// The body withholds reasons; the log must carry them.
func TestLogs(t *testing.T) {
	tests := []struct {
		name    string
		query   string
		want    []string
		wantNot []string
	}{
		{name: "failure logs each reason", want: []string{
			"level=INFO", `msg="readyz check failed"`, "failed=etcd,remote/a",
			`reasons.etcd="dial tcp: refused"`, `reasons.remote/a=unreachable`}},
		{name: "unknown exclude logs at debug", query: "exclude=etcd&exclude=remote/a&exclude=nope", want: []string{
			"level=DEBUG", `names="\"nope\""`}, wantNot: []string{"check failed"}},
		{name: "success logs nothing", query: "exclude=etcd&exclude=remote/a", wantNot: []string{"level="}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			buf := withLog(t)
			h := Handler("readyz", fixed(PingHealthz, failCheck("etcd", "dial tcp: refused"), failCheck("remote/a", "unreachable")))
			serve(h, "GET", "/readyz", tt.query)
			out := buf.String()
			for _, s := range tt.want {
				if !strings.Contains(out, s) {
					t.Errorf("log lacks %q:\n%s", s, out)
				}
			}
			for _, s := range tt.wantNot {
				if strings.Contains(out, s) {
					t.Errorf("log has %q:\n%s", s, out)
				}
			}
		})
	}
}
