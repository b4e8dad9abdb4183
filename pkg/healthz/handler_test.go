package healthz

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Each case is one rule of kube's healthz handler, served through Install
// on a ServeMux as the server will use it.
func TestEndpointRules(t *testing.T) {
	mixed := []Checker{PingHealthz, okCheck("etcd"), failCheck("bad", "boom")}
	passing := []Checker{PingHealthz, okCheck("etcd"), okCheck("poststarthook/foo"), okCheck("core/poststarthook/bar")}
	const notFound = "404 page not found\n"
	tests := []struct {
		name     string
		checks   []Checker
		method   string
		path     string
		query    string
		wantCode int
		wantBody string
	}{
		{name: "all pass", checks: passing, path: "/readyz",
			wantCode: 200, wantBody: "ok"},
		{name: "verbose lists all in order", checks: passing, path: "/readyz", query: "verbose",
			wantCode: 200, wantBody: "[+]ping ok\n[+]etcd ok\n[+]poststarthook/foo ok\n[+]core/poststarthook/bar ok\nreadyz check passed\n"},
		{name: "verbose is a key: any value counts", checks: []Checker{PingHealthz}, path: "/readyz", query: "verbose=false",
			wantCode: 200, wantBody: "[+]ping ok\nreadyz check passed\n"},
		{name: "failure lists every check without verbose", checks: mixed, path: "/readyz",
			wantCode: 500, wantBody: "[+]ping ok\n[+]etcd ok\n[-]bad failed: reason withheld\nreadyz check failed\n"},
		{name: "failure with verbose is the same", checks: mixed, path: "/readyz", query: "verbose",
			wantCode: 500, wantBody: "[+]ping ok\n[+]etcd ok\n[-]bad failed: reason withheld\nreadyz check failed\n"},
		{name: "excluding the failure passes", checks: mixed, path: "/readyz", query: "exclude=bad",
			wantCode: 200, wantBody: "ok"},
		{name: "excluded check is listed as ok", checks: mixed, path: "/readyz", query: "verbose&exclude=bad",
			wantCode: 200, wantBody: "[+]ping ok\n[+]etcd ok\n[+]bad excluded: ok\nreadyz check passed\n"},
		{name: "repeated exclude", checks: mixed, path: "/readyz", query: "exclude=bad&exclude=etcd&verbose",
			wantCode: 200, wantBody: "[+]ping ok\n[+]etcd excluded: ok\n[+]bad excluded: ok\nreadyz check passed\n"},
		{name: "exclude covers every check of that name", checks: []Checker{failCheck("dup", "x"), failCheck("dup", "y")}, path: "/readyz", query: "exclude=dup&verbose",
			wantCode: 200, wantBody: "[+]dup excluded: ok\n[+]dup excluded: ok\nreadyz check passed\n"},
		{name: "subpath runs the first check of that name", checks: []Checker{okCheck("dup"), failCheck("dup", "y")}, path: "/readyz/dup",
			wantCode: 200, wantBody: "ok"},
		{name: "exclude with slashes", checks: passing, path: "/readyz", query: "exclude=core/poststarthook/bar&verbose",
			wantCode: 200, wantBody: "[+]ping ok\n[+]etcd ok\n[+]poststarthook/foo ok\n[+]core/poststarthook/bar excluded: ok\nreadyz check passed\n"},
		{name: "unknown exclude warns", checks: []Checker{PingHealthz}, path: "/readyz", query: "verbose&exclude=dontexist",
			wantCode: 200, wantBody: "[+]ping ok\nwarn: some health checks cannot be excluded: no matches for \"dontexist\"\nreadyz check passed\n"},
		{name: "unknown excludes are deduplicated and sorted", checks: []Checker{PingHealthz}, path: "/readyz", query: "verbose&exclude=zz&exclude=aa&exclude=zz",
			wantCode: 200, wantBody: "[+]ping ok\nwarn: some health checks cannot be excluded: no matches for \"aa\",\"zz\"\nreadyz check passed\n"},
		{name: "unknown exclude is silent without verbose", checks: []Checker{PingHealthz}, path: "/readyz", query: "exclude=dontexist",
			wantCode: 200, wantBody: "ok"},
		{name: "unknown exclude warns on failure too", checks: mixed, path: "/readyz", query: "exclude=nope",
			wantCode: 500, wantBody: "[+]ping ok\n[+]etcd ok\n[-]bad failed: reason withheld\nwarn: some health checks cannot be excluded: no matches for \"nope\"\nreadyz check failed\n"},
		{name: "exclude value is url-decoded", checks: passing, path: "/readyz", query: "verbose&exclude=poststarthook%2Ffoo",
			wantCode: 200, wantBody: "[+]ping ok\n[+]etcd ok\n[+]poststarthook/foo excluded: ok\n[+]core/poststarthook/bar ok\nreadyz check passed\n"},
		{name: "no checks serves ping", path: "/readyz", query: "verbose",
			wantCode: 200, wantBody: "[+]ping ok\nreadyz check passed\n"},
		{name: "no checks: ping subpath exists", path: "/readyz/ping",
			wantCode: 200, wantBody: "ok"},
		{name: "subpath passes", checks: mixed, path: "/readyz/etcd",
			wantCode: 200, wantBody: "ok"},
		{name: "subpath with one slash", checks: passing, path: "/readyz/poststarthook/foo",
			wantCode: 200, wantBody: "ok"},
		{name: "subpath with two slashes", checks: passing, path: "/readyz/core/poststarthook/bar",
			wantCode: 200, wantBody: "ok"},
		{name: "subpath failure shows the reason", checks: mixed, path: "/readyz/bad",
			wantCode: 500, wantBody: "internal server error: boom\n"},
		{name: "subpath ignores exclude", checks: mixed, path: "/readyz/bad", query: "exclude=bad",
			wantCode: 500, wantBody: "internal server error: boom\n"},
		{name: "subpath ignores verbose", checks: mixed, path: "/readyz/etcd", query: "verbose",
			wantCode: 200, wantBody: "ok"},
		{name: "unknown subpath", checks: mixed, path: "/readyz/nope",
			wantCode: 404, wantBody: notFound},
		{name: "partial name is not a match", checks: passing, path: "/readyz/poststarthook",
			wantCode: 404, wantBody: notFound},
		{name: "trailing slash on a check", checks: passing, path: "/readyz/etcd/",
			wantCode: 404, wantBody: notFound},
		{name: "trailing slash on the root", checks: passing, path: "/readyz/",
			wantCode: 404, wantBody: notFound},
		{name: "POST is served like GET, as kube does", checks: passing, method: "POST", path: "/readyz",
			wantCode: 200, wantBody: "ok"},
		{name: "HEAD is served", checks: passing, method: "HEAD", path: "/readyz/etcd",
			wantCode: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mux := http.NewServeMux()
			Install(mux, "readyz", fixed(tt.checks...))
			method := tt.method
			if method == "" {
				method = "GET"
			}
			w := serve(mux, method, tt.path, tt.query)
			if w.Code != tt.wantCode {
				t.Errorf("status = %d, want %d (body %q)", w.Code, tt.wantCode, w.Body)
			}
			if method != "HEAD" && w.Body.String() != tt.wantBody {
				t.Errorf("body = %q, want %q", w.Body, tt.wantBody)
			}
		})
	}
}

// Every response, success or failure, is plain text that browsers must not
// sniff.
func TestHeaders(t *testing.T) {
	h := Handler("readyz", fixed(PingHealthz, failCheck("bad", "boom")))
	tests := []struct {
		name, path, query string
		wantCode          int
	}{
		{"root failure", "/readyz", "", 500},
		{"root success", "/readyz", "exclude=bad", 200},
		{"root verbose success", "/readyz", "exclude=bad&verbose", 200},
		{"subpath success", "/readyz/ping", "", 200},
		{"subpath failure", "/readyz/bad", "", 500},
		{"unknown subpath", "/readyz/nope", "", 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := serve(h, "GET", tt.path, tt.query)
			if w.Code != tt.wantCode {
				t.Fatalf("status = %d, want %d", w.Code, tt.wantCode)
			}
			if got := w.Header().Get("Content-Type"); got != "text/plain; charset=utf-8" {
				t.Errorf("Content-Type = %q", got)
			}
			if got := w.Header().Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options = %q", got)
			}
		})
	}
}

// The last line names the endpoint: kube uses the path's first segment.
func TestEndpointName(t *testing.T) {
	tests := []struct {
		endpoint, path, want string
	}{
		{"livez", "/livez", "[+]ping ok\nlivez check passed\n"},
		{"/healthz", "/healthz", "[+]ping ok\nhealthz check passed\n"},
		{"/readyz/", "/readyz", "[+]ping ok\nreadyz check passed\n"},
		{"healthz/test", "/healthz/test", "[+]ping ok\nhealthz check passed\n"},
	}
	for _, tt := range tests {
		t.Run(tt.endpoint, func(t *testing.T) {
			w := serve(Handler(tt.endpoint, nil), "GET", tt.path, "verbose")
			if w.Code != 200 || w.Body.String() != tt.want {
				t.Errorf("got %d %q, want 200 %q", w.Code, w.Body, tt.want)
			}
		})
	}
}

func TestHandlerRejectsOtherPaths(t *testing.T) {
	h := Handler("readyz", nil)
	for _, p := range []string{"/", "/readyzz", "/livez", "/readyz-x/ping", "readyz"} {
		if w := serve(h, "GET", p, ""); w.Code != 404 {
			t.Errorf("%s: status %d, want 404", p, w.Code)
		}
	}
}

func TestEmptyEndpointPanics(t *testing.T) {
	for _, e := range []string{"", "/", "//"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Handler(%q) did not panic", e)
				}
			}()
			Handler(e, nil)
		}()
	}
}

// Checks are read per request: the gateway adds and removes checks for
// remote instances while serving.
func TestDynamicChecks(t *testing.T) {
	var mu sync.Mutex
	checks := []Checker{PingHealthz}
	set := func(cs ...Checker) { mu.Lock(); checks = cs; mu.Unlock() }
	get := func() []Checker { mu.Lock(); defer mu.Unlock(); return checks }

	mux := http.NewServeMux()
	Install(mux, "readyz", get)
	steps := []struct {
		name     string
		change   func()
		path     string
		query    string
		wantCode int
		wantBody string
	}{
		{name: "remote unknown before it joins", path: "/readyz/remote/a",
			wantCode: 404, wantBody: "404 page not found\n"},
		{name: "remote joins failing", change: func() { set(PingHealthz, failCheck("remote/a", "unreachable")) },
			path: "/readyz", wantCode: 500, wantBody: "[+]ping ok\n[-]remote/a failed: reason withheld\nreadyz check failed\n"},
		{name: "its subpath appears", path: "/readyz/remote/a",
			wantCode: 500, wantBody: "internal server error: unreachable\n"},
		{name: "remote recovers", change: func() { set(PingHealthz, okCheck("remote/a")) },
			path: "/readyz", query: "verbose", wantCode: 200, wantBody: "[+]ping ok\n[+]remote/a ok\nreadyz check passed\n"},
		{name: "remote leaves", change: func() { set(PingHealthz) },
			path: "/readyz", query: "verbose", wantCode: 200, wantBody: "[+]ping ok\nreadyz check passed\n"},
		{name: "its subpath is gone", path: "/readyz/remote/a",
			wantCode: 404, wantBody: "404 page not found\n"},
	}
	for _, s := range steps {
		if s.change != nil {
			s.change()
		}
		w := serve(mux, "GET", s.path, s.query)
		if w.Code != s.wantCode || w.Body.String() != s.wantBody {
			t.Fatalf("%s: got %d %q, want %d %q", s.name, w.Code, w.Body, s.wantCode, s.wantBody)
		}
	}
}

// Checks run in order, one at a time, each exactly once per request.
func TestChecksRunInOrderOnce(t *testing.T) {
	var order []string
	rec := func(name string) Checker {
		return NamedCheck(name, func(*http.Request) error { order = append(order, name); return nil })
	}
	h := Handler("readyz", fixed(rec("a"), rec("b"), rec("c")))
	serve(h, "GET", "/readyz", "exclude=b")
	if got := len(order); got != 2 || order[0] != "a" || order[1] != "c" {
		t.Fatalf("ran %v, want [a c]", order)
	}
}

// The request reaches the check, so checks can read its context.
func TestCheckSeesRequest(t *testing.T) {
	var path string
	h := Handler("readyz", fixed(NamedCheck("x", func(r *http.Request) error { path = r.URL.Path; return nil })))
	serve(h, "GET", "/readyz/x", "")
	if path != "/readyz/x" {
		t.Fatalf("check saw path %q", path)
	}
}

type notedCheck struct{ Checker }

func (notedCheck) Note() string { return "2/2 instances ready" }

func TestNoteOnVerboseOKLine(t *testing.T) {
	h := Handler("readyz", func() []Checker {
		return []Checker{notedCheck{NamedCheck("core", func(*http.Request) error { return nil })}}
	})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz?verbose", nil))
	if got, want := rec.Body.String(), "[+]core ok (2/2 instances ready)\nreadyz check passed\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
