package healthz

import (
	"strings"
	"testing"
)

// FuzzHandler feeds arbitrary queries and subpaths: the handler must not
// panic and must answer 200, 404 or 500 only.
func FuzzHandler(f *testing.F) {
	for _, s := range [][2]string{
		{"", ""}, {"verbose", ""}, {"exclude=bad&exclude=x&verbose", ""}, {"exclude=%zz;&&=", ""},
		{"", "ping"}, {"", "bad"}, {"verbose", "core/poststarthook/bar"}, {"", "/"}, {"", "a//b/../"},
	} {
		f.Add(s[0], s[1])
	}
	checks := fixed(PingHealthz, failCheck("bad", "boom"), okCheck("core/poststarthook/bar"))
	h := Handler("readyz", checks)
	f.Fuzz(func(t *testing.T, query, sub string) {
		path := "/readyz"
		if sub != "" {
			path += "/" + sub
		}
		w := serve(h, "GET", path, query)
		switch w.Code {
		case 200, 404, 500:
		default:
			t.Fatalf("status %d for path %q query %q", w.Code, path, query)
		}
		if sub == "" && w.Code == 200 && w.Body.String() != "ok" && !strings.HasSuffix(w.Body.String(), "readyz check passed\n") {
			t.Fatalf("unexpected 200 body %q", w.Body)
		}
	})
}
