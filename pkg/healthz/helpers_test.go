package healthz

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
)

// okCheck and failCheck build checks for tables.
func okCheck(name string) Checker {
	return NamedCheck(name, func(*http.Request) error { return nil })
}

func failCheck(name, reason string) Checker {
	return NamedCheck(name, func(*http.Request) error { return errors.New(reason) })
}

func fixed(checks ...Checker) func() []Checker {
	return func() []Checker { return checks }
}

// serve sends method to path?rawQuery through h. The request is built by
// hand so arbitrary (fuzzed) paths and queries cannot make it panic.
func serve(h http.Handler, method, path, rawQuery string) *httptest.ResponseRecorder {
	r := &http.Request{
		Method:     method,
		URL:        &url.URL{Path: path, RawQuery: rawQuery},
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     http.Header{},
		Host:       "example.com",
		RequestURI: path,
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}
