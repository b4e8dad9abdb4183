// Package readiness is the gateway's view of the backends' readiness, for its /readyz: per
// service, how many instances are ready, and each check of theirs by name.
package readiness

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	lifecyclev1 "github.com/apichain/apichain/gen/apichain/lifecycle/v1"
	"github.com/apichain/apichain/pkg/healthz"
	"github.com/apichain/apichain/pkg/lifecycle"
	"github.com/apichain/apichain/pkg/topology"
)

// RemoteChecks are the gateway's readyz checks for the backends, built per call from the
// lifecycle registry: "<service>" passes when at least one instance is ready, and each check
// of the service's instances appears as "<service>/<check>", passing when it passes on some
// instance, with the hook's duration noted. A check "lifecycle" says where the state comes from.
func RemoteChecks(reg *lifecycle.Registry) []healthz.Checker {
	states := reg.Instances()
	out := []healthz.Checker{sourceCheck{reg.Source()}}
	for _, svc := range topology.Chain() {
		var insts []*lifecyclev1.InstanceState
		for _, st := range states {
			if st.GetService() == svc {
				insts = append(insts, st)
			}
		}
		out = append(out, serviceCheck{service: svc, insts: insts})
		out = append(out, instanceChecks(svc, insts)...)
	}
	return out
}

type sourceCheck struct{ source lifecycle.Source }

func (sourceCheck) Name() string              { return "lifecycle" }
func (sourceCheck) Check(*http.Request) error { return nil }
func (c sourceCheck) Note() string {
	if c.source == lifecycle.SourceGRPC {
		return "NATS unreachable: readiness from grpc.health.v1 fallback"
	}
	return "from NATS"
}

type serviceCheck struct {
	service string
	insts   []*lifecyclev1.InstanceState
}

func (c serviceCheck) Name() string { return c.service }

func (c serviceCheck) ready() int {
	n := 0
	for _, st := range c.insts {
		if lifecycle.Routable(st) {
			n++
		}
	}
	return n
}

func (c serviceCheck) Check(*http.Request) error {
	if c.ready() == 0 {
		return fmt.Errorf("no ready instance of %s (%d known)", c.service, len(c.insts))
	}
	return nil
}

func (c serviceCheck) Note() string {
	return fmt.Sprintf("%d/%d instances ready", c.ready(), len(c.insts))
}

// instanceChecks merges the instances' checks by name, in the first instance's order.
func instanceChecks(svc string, insts []*lifecyclev1.InstanceState) []healthz.Checker {
	type merged struct {
		ok        bool
		errs      []string
		durations []string
		notes     []string
	}
	var order []string
	byName := map[string]*merged{}
	for _, st := range insts {
		hookDur := map[string]string{}
		for _, h := range st.GetHooks() {
			if h.GetFinishedAt() != nil && h.GetStartedAt() != nil {
				d := h.GetFinishedAt().AsTime().Sub(h.GetStartedAt().AsTime())
				hookDur["poststarthook/"+h.GetName()] = d.Round(time.Millisecond).String()
			}
		}
		for _, c := range st.GetChecks() {
			m, ok := byName[c.GetName()]
			if !ok {
				m = &merged{}
				byName[c.GetName()] = m
				order = append(order, c.GetName())
			}
			if c.GetOk() {
				m.ok = true
			} else {
				m.errs = append(m.errs, st.GetInstanceId()+": "+c.GetError())
			}
			if d, ok := hookDur[c.GetName()]; ok {
				m.durations = append(m.durations, d)
			}
			if n := c.GetNote(); n != "" {
				if len(insts) > 1 {
					n = st.GetInstanceId() + ": " + n
				}
				m.notes = append(m.notes, n)
			}
		}
	}
	out := make([]healthz.Checker, 0, len(order))
	for _, name := range order {
		m := byName[name]
		var err error
		if !m.ok {
			err = errors.New(strings.Join(m.errs, "; "))
		}
		out = append(out, healthz.Result{CheckName: svc + "/" + name, Err: err, NoteText: strings.Join(append(m.durations, m.notes...), ", ")})
	}
	return out
}
