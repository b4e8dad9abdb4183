package healthz

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
)

// serveAll runs every check that is not excluded, in order, and writes
// kube's aggregate report. name is the endpoint's name ("readyz"), used in
// the last line of the body.
func serveAll(w http.ResponseWriter, r *http.Request, name string, checks []Checker) {
	query := r.URL.Query()
	// Value records whether some check matched, for the "warn:" line.
	excluded := make(map[string]bool)
	for _, n := range query["exclude"] {
		excluded[n] = false
	}

	var body bytes.Buffer
	var failed []string
	var reasons []any
	for _, c := range checks {
		cn := c.Name()
		if _, ok := excluded[cn]; ok {
			excluded[cn] = true
			fmt.Fprintf(&body, "[+]%s excluded: ok\n", cn)
			continue
		}
		if err := c.Check(r); err != nil {
			// The endpoint is public, so the reason only goes to the log.
			fmt.Fprintf(&body, "[-]%s failed: reason withheld\n", cn)
			failed = append(failed, cn)
			reasons = append(reasons, slog.String(cn, err.Error()))
			continue
		}
		if n, ok := c.(Noter); ok && n.Note() != "" {
			fmt.Fprintf(&body, "[+]%s ok (%s)\n", cn, n.Note())
			continue
		}
		fmt.Fprintf(&body, "[+]%s ok\n", cn)
	}

	if unmatched := unmatchedExcludes(excluded); len(unmatched) > 0 {
		fmt.Fprintf(&body, "warn: some health checks cannot be excluded: no matches for %s\n", unmatched)
		// kube logs this at V(6): probes often exclude checks a server lacks.
		slog.DebugContext(r.Context(), "cannot exclude some health checks, no health checks are installed matching",
			"endpoint", name, "names", unmatched)
	}

	if len(failed) > 0 {
		slog.InfoContext(r.Context(), name+" check failed",
			"failed", strings.Join(failed, ","), slog.Group("reasons", reasons...))
		// kube prints the list on failure even without ?verbose.
		// http.Error sets the plain-text and nosniff headers and adds "\n".
		http.Error(w, body.String()+name+" check failed", http.StatusInternalServerError)
		return
	}

	setTextHeaders(w)
	if _, verbose := query["verbose"]; !verbose {
		fmt.Fprint(w, "ok")
		return
	}
	fmt.Fprintf(&body, "%s check passed\n", name)
	_, _ = body.WriteTo(w)
}

// unmatchedExcludes formats the excluded names no check matched the way kube
// does: sorted, each %q-quoted, joined by ",". Empty when all matched.
func unmatchedExcludes(excluded map[string]bool) string {
	var names []string
	for n, matched := range excluded {
		if !matched {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for i, n := range names {
		names[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(names, ",")
}

func setTextHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
}
