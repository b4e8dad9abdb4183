package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

func watchObjectName(i int) string { return fmt.Sprintf("watch-%06d", i) }

// watch measures event fan-out: cfg.Watchers watches on the namespace, then
// cfg.WatchEvents objects created one by one. A delivery is one (event, watcher) pair;
// its latency is from the start of the create call to that watcher receiving the
// ADDED event (measuring from the start rather than the return keeps every latency
// positive: a server may deliver the event before the create response arrives). A
// delivery that does not arrive within cfg.WatchTimeout after the last create is a
// failure.
func (w *workload) watch(ctx context.Context) (res Result) {
	cfg := w.cfg
	res = Result{Operation: opWatch, Count: cfg.Watchers * cfg.WatchEvents,
		Notes: []string{fmt.Sprintf("%d watchers x %d events", cfg.Watchers, cfg.WatchEvents)}}
	if res.Count == 0 {
		return res
	}
	var samples errorSamples
	defer func() { res.ErrorSamples = samples.list() }()
	selector := setLabel + "=" + watchSet

	// Watch from the resource version of a list, so that every watcher sees every
	// create no matter how late the server registers the watch.
	lctx, cancel := context.WithTimeout(ctx, cfg.OpTimeout)
	list, err := w.configMaps().List(lctx, metav1.ListOptions{LabelSelector: selector, Limit: 1})
	cancel()
	if err != nil {
		samples.add(fmt.Errorf("listing for the watch resource version: %w", err))
		res.Errors = res.Count
		return res
	}
	opts := metav1.ListOptions{LabelSelector: selector, ResourceVersion: list.ResourceVersion}

	index := make(map[string]int, cfg.WatchEvents)
	for i := range cfg.WatchEvents {
		index[watchObjectName(i)] = i
	}
	// started[i] is 1 + the time, since base, at which create i started (0: not yet).
	base := time.Now()
	started := make([]atomic.Int64, cfg.WatchEvents)

	phaseCtx, stopWatches := context.WithCancel(ctx)
	defer stopWatches()
	latencies := make([][]time.Duration, cfg.Watchers)
	var established, finished sync.WaitGroup
	var watchFailures atomic.Int64
	established.Add(cfg.Watchers)
	for i := range cfg.Watchers {
		finished.Go(func() {
			wi, err := w.configMaps().Watch(phaseCtx, opts)
			established.Done()
			if err != nil {
				watchFailures.Add(1)
				samples.add(fmt.Errorf("starting watch: %w", err))
				return
			}
			defer wi.Stop()
			var err2 error
			latencies[i], err2 = receive(phaseCtx, wi, index, base, started)
			if err2 != nil {
				samples.add(err2)
			}
		})
	}
	if !waitTimeout(&established, cfg.OpTimeout) {
		stopWatches()
		finished.Wait()
		samples.add(fmt.Errorf("watches not established within %s", cfg.OpTimeout))
		res.Errors = res.Count
		return res
	}
	if n := watchFailures.Load(); n > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d watches failed to start", n))
	}

	first := time.Now()
	createErrors := 0
	for i := range cfg.WatchEvents {
		if ctx.Err() != nil {
			break
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: watchObjectName(i), Labels: map[string]string{setLabel: watchSet}},
			Data: map[string]string{"payload": payload}}
		started[i].Store(int64(time.Since(base)) + 1)
		cctx, cancel := context.WithTimeout(ctx, cfg.OpTimeout)
		_, err := w.configMaps().Create(cctx, cm, metav1.CreateOptions{})
		cancel()
		if err != nil {
			createErrors++
			samples.add(fmt.Errorf("creating %s: %w", cm.Name, err))
		}
	}
	if createErrors > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d creates failed", createErrors))
	}
	if !waitTimeout(&finished, cfg.WatchTimeout) {
		res.Notes = append(res.Notes, fmt.Sprintf("timed out after %s waiting for deliveries", cfg.WatchTimeout))
	}
	stopWatches()
	finished.Wait()
	res.Elapsed = time.Since(first)

	var all []time.Duration
	for _, l := range latencies {
		all = append(all, l...)
	}
	res.Errors = res.Count - len(all)
	res.Latency = Summarize(all)
	return res
}

// receive consumes one watch until it has seen the ADDED event of every watch object,
// and returns the delivery latencies. It stops early (with what it has) when ctx is
// done, the watch ends, or the server sends an error event.
func receive(ctx context.Context, wi watch.Interface, index map[string]int, base time.Time, started []atomic.Int64) ([]time.Duration, error) {
	seen := make([]bool, len(started))
	lat := make([]time.Duration, 0, len(started))
	for len(lat) < len(started) {
		select {
		case <-ctx.Done():
			return lat, nil // the caller accounts for missing deliveries
		case ev, ok := <-wi.ResultChan():
			if !ok {
				if ctx.Err() != nil {
					return lat, nil
				}
				return lat, errors.New("watch closed by the server before all events arrived")
			}
			switch ev.Type {
			case watch.Added:
				now := time.Since(base)
				cm, ok := ev.Object.(*corev1.ConfigMap)
				if !ok {
					continue
				}
				i, ok := index[cm.Name]
				if !ok || seen[i] {
					continue
				}
				start := started[i].Load()
				if start == 0 {
					return lat, fmt.Errorf("ADDED event for %s before it was created", cm.Name)
				}
				seen[i] = true
				lat = append(lat, now-time.Duration(start-1))
			case watch.Error:
				return lat, fmt.Errorf("watch error event: %w", apierrors.FromObject(ev.Object))
			}
		}
	}
	return lat, nil
}

// waitTimeout waits for wg, up to d; it reports whether wg finished.
func waitTimeout(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}
