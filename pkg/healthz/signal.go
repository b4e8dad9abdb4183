package healthz

import (
	"errors"
	"net/http"
)

// SignalCheck passes until ch is closed and fails with err from then on.
// kube's readyz uses this as "shutdown" with "process is shutting down" so
// load balancers drain the server before it stops serving.
func SignalCheck(name string, ch <-chan struct{}, err error) Checker {
	if err == nil {
		// A nil error would make the check pass forever and hide the signal.
		err = errors.New(name + " signaled")
	}
	return signalCheck{name: name, ch: ch, err: err}
}

type signalCheck struct {
	name string
	ch   <-chan struct{}
	err  error
}

func (c signalCheck) Name() string { return c.name }

func (c signalCheck) Check(*http.Request) error {
	select {
	case <-c.ch:
		return c.err
	default:
		return nil
	}
}
