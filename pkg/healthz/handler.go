package healthz

import (
	"fmt"
	"net/http"
	"strings"
)

// Install registers Handler(endpoint, checks) on mux for /<endpoint> and
// every path below it, so check names containing '/' work and checks added
// after Install get their subpath without re-registering.
func Install(mux *http.ServeMux, endpoint string, checks func() []Checker) {
	InstallHandler(mux, endpoint, Handler(endpoint, checks))
}

// InstallHandler registers h (a Handler or ResultsHandler for endpoint) for /<endpoint> and
// every path below it.
func InstallHandler(mux *http.ServeMux, endpoint string, h http.Handler) {
	path := "/" + strings.Trim(endpoint, "/")
	mux.Handle(path, h)
	mux.Handle(path+"/", h)
}

// Handler serves /<endpoint> (all checks) and /<endpoint>/<name> (one
// check); any other path is 404. checks is called once per request so the
// set may change at runtime; an empty set serves PingHealthz, as kube does.
// endpoint may be given with or without slashes ("readyz", "/readyz").
func Handler(endpoint string, checks func() []Checker) http.Handler {
	return newHandler(endpoint, perRequest(checks))
}

func perRequest(checks func() []Checker) func(*http.Request) []Checker {
	if checks == nil {
		return nil
	}
	return func(*http.Request) []Checker { return checks() }
}

// ResultsHandler is Handler for checks that run elsewhere: results runs them once per request
// and returns their outcomes (see Run), which the handler reports.
func ResultsHandler(endpoint string, results func(r *http.Request) []Result) http.Handler {
	return newHandler(endpoint, func(r *http.Request) []Checker {
		rs := results(r)
		out := make([]Checker, len(rs))
		for i, res := range rs {
			out[i] = res
		}
		return out
	})
}

type handler struct {
	path   string // "/readyz"
	name   string // "readyz": first path segment, as kube names it
	checks func(*http.Request) []Checker
}

func newHandler(endpoint string, checks func(*http.Request) []Checker) *handler {
	trimmed := strings.Trim(endpoint, "/")
	if trimmed == "" {
		// An empty endpoint would claim every path on the mux.
		panic(fmt.Sprintf("healthz: invalid endpoint %q", endpoint))
	}
	name, _, _ := strings.Cut(trimmed, "/")
	return &handler{path: "/" + trimmed, name: name, checks: checks}
}

// ServeHTTP accepts every method, as kube's handler does: which verbs a
// caller may use is the authorizer's decision, not this handler's.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case p == h.path:
		serveAll(w, r, h.name, h.current(r))
	case strings.HasPrefix(p, h.path+"/"):
		serveOne(w, r, h.current(r), p[len(h.path)+1:])
	default:
		http.NotFound(w, r)
	}
}

func (h *handler) current(r *http.Request) []Checker {
	var checks []Checker
	if h.checks != nil {
		checks = h.checks(r)
	}
	if len(checks) == 0 {
		return []Checker{PingHealthz}
	}
	return checks
}

// serveOne runs the first check called name, like kube's per-check
// handler. Unlike the root it shows the reason: kube's default RBAC makes
// only the root paths public, so reaching a subpath takes explicit access.
// Unknown names are 404.
func serveOne(w http.ResponseWriter, r *http.Request, checks []Checker, name string) {
	for _, c := range checks {
		if c.Name() != name {
			continue
		}
		if err := c.Check(r); err != nil {
			http.Error(w, fmt.Sprintf("internal server error: %v", err), http.StatusInternalServerError)
			return
		}
		setTextHeaders(w)
		fmt.Fprint(w, "ok")
		return
	}
	http.NotFound(w, r)
}
