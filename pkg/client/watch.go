package client

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// ResumingWatch is a Watch that goes on where its stream ends. When the server ends the
// stream (its timeout, a backend restarting) or the connection fails, it watches again from
// the last resourceVersion it delivered, an event's or a bookmark's (it asks for bookmarks,
// and delivers them), so no event is lost or repeated. Like client-go's RetryWatcher it
// starts from a resourceVersion a list returned.
//
// It ends when ctx is done or Stop is called, or after an ERROR event that watching again
// cannot cure: the resourceVersion is too old (410 Gone: list again), or the watch is refused
// (400, 401, 403, 404, ...).
func (r *Resource[T, L]) ResumingWatch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	if opts.ResourceVersion == "" || opts.ResourceVersion == "0" {
		return nil, errors.New("apichain client: a resuming watch starts from a resourceVersion a list returned")
	}
	if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
		return nil, errors.New("apichain client: a resuming watch does not send initial events; list first")
	}
	opts.AllowWatchBookmarks = true
	opts.ResourceVersionMatch = ""
	ctx, cancel := context.WithCancel(ctx)
	rw := &streamWatch{cancel: cancel, events: make(chan watch.Event)}
	go func() {
		defer close(rw.events)
		defer cancel()
		send := func(ev watch.Event) bool {
			select {
			case rw.events <- ev:
				return true
			case <-ctx.Done():
				return false
			}
		}
		delay := retryDelay{}
		for ctx.Err() == nil {
			w, err := r.Watch(ctx, opts)
			if err != nil {
				if st := statusOf(err); !retriable(st) {
					send(watch.Event{Type: watch.Error, Object: st})
					return
				}
				delay.wait(ctx)
				continue
			}
			for ev := range w.ResultChan() {
				if ev.Type == watch.Error {
					if st, _ := ev.Object.(*metav1.Status); st == nil || !retriable(st) {
						send(ev)
						w.Stop()
						return
					}
					break // watch again from where it was
				}
				if acc, err := meta.Accessor(ev.Object); err == nil && acc.GetResourceVersion() != "" {
					opts.ResourceVersion = acc.GetResourceVersion()
				}
				if !send(ev) {
					w.Stop()
					return
				}
				delay.reset()
			}
			w.Stop()
			delay.wait(ctx)
		}
	}()
	return rw, nil
}

// retriable says whether watching again can cure the failure a watch ended with: the server
// went away, was busy, or timed out; not a resourceVersion too old, nor a refusal.
func retriable(st *metav1.Status) bool {
	switch st.Code {
	case http.StatusGone, http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound,
		http.StatusMethodNotAllowed, http.StatusNotAcceptable, http.StatusUnprocessableEntity:
		return false
	}
	return true
}

func statusOf(err error) *metav1.Status {
	var se interface{ Status() metav1.Status }
	if errors.As(err, &se) {
		st := se.Status()
		return &st
	}
	return &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Message: err.Error()}
}

// retryDelay backs off between attempts to watch again: at once after a stream that
// delivered events, then from 100 ms doubling to 5 s, with jitter.
type retryDelay struct{ next time.Duration }

func (d *retryDelay) reset() { d.next = 0 }

func (d *retryDelay) wait(ctx context.Context) {
	if d.next > 0 {
		t := time.NewTimer(d.next/2 + rand.N(d.next/2+1))
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
	d.next = min(max(2*d.next, 100*time.Millisecond), 5*time.Second)
}
