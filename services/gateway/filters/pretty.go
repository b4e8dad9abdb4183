package filters

import (
	"net/http"
	"strconv"
	"strings"
)

// PrettyPrint reports whether kube indents JSON for the request: ?pretty=<bool> says so, and
// otherwise clients that show JSON to a person (curl, Wget, browsers) get it indented.
func PrettyPrint(r *http.Request) bool {
	if strings.Contains(r.URL.RawQuery, "pretty") {
		if v := r.URL.Query().Get("pretty"); v != "" {
			pretty, _ := strconv.ParseBool(v)
			return pretty
		}
	}
	ua := r.UserAgent()
	return strings.HasPrefix(ua, "curl") || strings.HasPrefix(ua, "Wget") || strings.HasPrefix(ua, "Mozilla/5.0")
}

// WithPrettyPrint marks the response of such a request, so every Status the gateway writes
// for it, whichever filter writes it, is indented.
func WithPrettyPrint(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if PrettyPrint(r) {
			w = prettyWriter{w}
		}
		next.ServeHTTP(w, r)
	})
}

type prettyWriter struct{ http.ResponseWriter }

func (p prettyWriter) Flush() {
	if f, ok := p.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (p prettyWriter) Unwrap() http.ResponseWriter { return p.ResponseWriter }

// IsPretty reports whether w answers a request that gets indented JSON: the writers of the
// filters in between unwrap to it, or (the timeout's, which nothing may write around) say
// what they write to.
func IsPretty(w http.ResponseWriter) bool {
	for {
		switch v := w.(type) {
		case prettyWriter:
			return true
		case interface{ writesTo() http.ResponseWriter }:
			w = v.writesTo()
		case interface{ Unwrap() http.ResponseWriter }:
			w = v.Unwrap()
		default:
			return false
		}
	}
}
