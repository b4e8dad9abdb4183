// Package controller holds the controllers a bare kube-apiserver runs, and those of
// kube-controller-manager that users of a bare API server miss first, one per package, and
// Loop, the loop every one of them runs.
package controller

import (
	"context"
	"time"
)

// Loop runs pass now, after any trigger fires, every resync (never when 0) and again within a
// second of a pass that failed, until ctx ends: the loop of a controller that recomputes what
// it owns from what it reads. Triggers that fire while a pass runs lead to one more pass, not
// one each (a fresh cluster's bootstrap writes some 70 cluster roles at once). A trigger that
// closes is no longer listened to.
func Loop[T any](ctx context.Context, resync time.Duration, pass func(context.Context) error, triggers ...<-chan T) {
	wake := make(chan struct{}, 1)
	for _, trigger := range triggers {
		go func() {
			for {
				select {
				case _, ok := <-trigger:
					if !ok {
						return
					}
					select {
					case wake <- struct{}{}:
					default: // a pass is due already
					}
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	var tick <-chan time.Time // nil: never
	if resync > 0 {
		t := time.NewTicker(resync)
		defer t.Stop()
		tick = t.C
	}
	for {
		var again <-chan time.Time // nil: no retry
		if err := pass(ctx); err != nil && ctx.Err() == nil {
			again = time.After(time.Second)
		}
		select {
		case <-ctx.Done():
			return
		case <-again:
		case <-wake:
		case <-tick:
		}
	}
}

// Filter passes on what in sends that keep keeps, until in closes or ctx ends.
func Filter[T any](ctx context.Context, in <-chan T, keep func(T) bool) <-chan T {
	out := make(chan T, cap(in))
	go func() {
		defer close(out)
		for {
			select {
			case v, ok := <-in:
				if !ok {
					return
				}
				if !keep(v) {
					continue
				}
				select {
				case out <- v:
				case <-ctx.Done():
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// Settle passes on the first of each burst of what in sends, d after it came: what comes
// meanwhile goes with it (a controller counts once for a burst of writes).
func Settle[T any](ctx context.Context, in <-chan T, d time.Duration) <-chan T {
	out := make(chan T, 1)
	go func() {
		defer close(out)
		for {
			var first T
			select {
			case v, ok := <-in:
				if !ok {
					return
				}
				first = v
			case <-ctx.Done():
				return
			}
			for settled := time.After(d); settled != nil; {
				select {
				case _, ok := <-in:
					if !ok {
						in = nil // nothing more will come; send what came
					}
				case <-settled:
					settled = nil
				case <-ctx.Done():
					return
				}
			}
			select {
			case out <- first:
			case <-ctx.Done():
				return
			}
			if in == nil {
				return
			}
		}
	}()
	return out
}
