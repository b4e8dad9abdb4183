package healthz

import "net/http"

// Checker is one named health check. Check returns nil when healthy.
type Checker interface {
	Name() string
	Check(req *http.Request) error
}

// Noter is implemented by checks that add a short note to their verbose "ok" line, such as
// a remote instance count or a hook's duration ("[+]core ok (2/2 instances ready)").
type Noter interface {
	Note() string
}

// NamedCheck returns a Checker that runs check under name.
func NamedCheck(name string, check func(r *http.Request) error) Checker {
	return namedCheck{name: name, check: check}
}

type namedCheck struct {
	name  string
	check func(r *http.Request) error
}

func (c namedCheck) Name() string                  { return c.name }
func (c namedCheck) Check(req *http.Request) error { return c.check(req) }

// PingHealthz always passes. It is also what an endpoint serves when it has
// no checks, as kube does, so that /<endpoint>/ping always exists.
var PingHealthz Checker = ping{}

type ping struct{}

func (ping) Name() string              { return "ping" }
func (ping) Check(*http.Request) error { return nil }

// Result is one check's outcome. It is itself a Checker that reports that outcome, so a
// report can be served from checks that ran once elsewhere.
type Result struct {
	CheckName string
	Err       error
	NoteText  string
}

// Name is the check's name.
func (r Result) Name() string { return r.CheckName }

// Check returns the outcome.
func (r Result) Check(*http.Request) error { return r.Err }

// Note is the check's note, if it had one.
func (r Result) Note() string { return r.NoteText }

// Run runs every check in order and records each outcome with its note.
func Run(req *http.Request, checks []Checker) []Result {
	out := make([]Result, len(checks))
	for i, c := range checks {
		out[i] = Result{CheckName: c.Name(), Err: c.Check(req)}
		if n, ok := c.(Noter); ok {
			out[i].NoteText = n.Note()
		}
	}
	return out
}
