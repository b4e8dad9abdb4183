package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/util/retry"
)

// Phase (operation) names, as reported.
const (
	opCreate         = "create"
	opGet            = "get"
	opList           = "list"
	opUpdate         = "update"
	opUpdateConflict = "update-conflict"
	opWatch          = "watch"
	opDelete         = "delete"
)

const (
	namespacePrefix = "apichain-bench-"
	// setLabel tells the workload's two sets of ConfigMaps apart, so that lists and
	// watches see only their own (a namespace may hold others, e.g. kube-root-ca.crt).
	setLabel       = "apichain-bench/set"
	objectsSet     = "objects"
	watchSet       = "watch"
	counterKey     = "counter"
	cleanupTimeout = 30 * time.Second
)

// workloadConfig is the fixed workload; see the flags in main.go.
type workloadConfig struct {
	Concurrency     int
	Objects         int
	Gets            int
	Lists           int
	ListPageSize    int64
	Updates         int
	ConflictObjects int
	// ConflictBackoff is passed to retry.RetryOnConflict; its Steps is the number of
	// attempts before giving up.
	ConflictBackoff wait.Backoff
	Watchers        int
	WatchEvents     int
	// WatchTimeout bounds the wait, after the last watch-event create, for deliveries.
	WatchTimeout time.Duration
	// OpTimeout bounds each request (and establishing the watches).
	OpTimeout time.Duration
	Keep      bool
	// CPUPIDFiles hold the PIDs of the server's processes, whose CPU time each phase reports
	// (none: not measured).
	CPUPIDFiles []string
}

func defaultWorkloadConfig() workloadConfig {
	return workloadConfig{
		Concurrency:     16,
		Objects:         1000,
		Lists:           20,
		ListPageSize:    500,
		Updates:         1000,
		ConflictObjects: 4,
		// Jittered and slowly growing, without Cap: wait.Backoff stops retrying when
		// the cap is reached. 30 attempts wait ~1-2 s in total.
		ConflictBackoff: wait.Backoff{Steps: 30, Duration: time.Millisecond, Factor: 1.2, Jitter: 1},
		Watchers:        100,
		WatchEvents:     200,
		WatchTimeout:    30 * time.Second,
		OpTimeout:       30 * time.Second,
	}
}

func (c workloadConfig) validate() error {
	var errs []error
	positive := func(name string, v int) {
		if v < 1 {
			errs = append(errs, fmt.Errorf("--%s must be at least 1, got %d", name, v))
		}
	}
	positive("concurrency", c.Concurrency)
	positive("objects", c.Objects)
	positive("conflict-objects", c.ConflictObjects)
	positive("conflict-retries", c.ConflictBackoff.Steps)
	for name, v := range map[string]int{"gets": c.Gets, "lists": c.Lists, "updates": c.Updates, "watchers": c.Watchers, "watch-events": c.WatchEvents} {
		if v < 0 {
			errs = append(errs, fmt.Errorf("--%s must not be negative, got %d", name, v))
		}
	}
	if c.ConflictObjects > c.Objects {
		errs = append(errs, fmt.Errorf("--conflict-objects (%d) must not exceed --objects (%d)", c.ConflictObjects, c.Objects))
	}
	if c.OpTimeout <= 0 || c.WatchTimeout <= 0 {
		errs = append(errs, errors.New("--op-timeout and --watch-timeout must be positive"))
	}
	if c.ListPageSize < 1 {
		errs = append(errs, fmt.Errorf("list page size must be at least 1, got %d", c.ListPageSize))
	}
	return errors.Join(errs...)
}

// workload runs the phases against any kube-compatible server through cs; unit tests
// pass a fake clientset.
type workload struct {
	cs   kubernetes.Interface
	cfg  workloadConfig
	logf func(format string, args ...any)
	ns   string
	// createdOK is the number of successful creates of the create phase.
	createdOK int
	// created says which objects the create phase made; versions are their resourceVersions
	// as created, for the update phase.
	created  []bool
	versions []string
}

// runWorkload creates a fresh namespace, runs every phase in it and deletes it (unless
// cfg.Keep). An error means the workload could not run at all (bad configuration, no
// namespace); failed operations are in the report instead.
func runWorkload(ctx context.Context, cs kubernetes.Interface, cfg workloadConfig, logf func(string, ...any)) (*Report, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	measure := len(cfg.CPUPIDFiles) > 0
	w := &workload{cs: cs, cfg: cfg, logf: logf}
	if err := w.createNamespace(ctx); err != nil {
		return nil, err
	}
	defer w.cleanup()
	rep := &Report{Namespace: w.ns}
	phases := []struct {
		name string
		run  func(context.Context) Result
	}{
		{opCreate, w.create},
		{opGet, w.get},
		{opList, w.list},
		{opUpdateConflict, w.updateConflict},
		{opUpdate, w.update},
		{opWatch, w.watch},
		{opDelete, w.delete},
	}
	for _, p := range phases {
		if ctx.Err() != nil {
			rep.Interrupted = true
			break
		}
		w.logf("phase %s ...", p.name)
		var before time.Duration
		var cpuErr error
		if measure {
			before, cpuErr = serverCPU(cfg.CPUPIDFiles)
		}
		res := p.run(ctx)
		if measure {
			after, err := serverCPU(cfg.CPUPIDFiles)
			if err = errors.Join(cpuErr, err); err != nil {
				res.Notes = append(res.Notes, "server CPU not read: "+err.Error())
			} else {
				res.ServerCPU = after - before
			}
		}
		w.logf("phase %s: %d ops, %d errors in %s", p.name, res.Count, res.Errors, res.Elapsed.Round(time.Millisecond))
		rep.Results = append(rep.Results, res)
	}
	if ctx.Err() != nil {
		rep.Interrupted = true
	}
	return rep, nil
}

func (w *workload) runner() runner {
	return runner{concurrency: w.cfg.Concurrency, opTimeout: w.cfg.OpTimeout}
}

func (w *workload) configMaps() typedcorev1.ConfigMapInterface {
	return w.cs.CoreV1().ConfigMaps(w.ns)
}

func (w *workload) createNamespace(ctx context.Context) error {
	var err error
	for range 3 {
		name := namespacePrefix + utilrand.String(6)
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{"app.kubernetes.io/created-by": "apichain-bench"}}}
		octx, cancel := context.WithTimeout(ctx, w.cfg.OpTimeout)
		_, err = w.cs.CoreV1().Namespaces().Create(octx, ns, metav1.CreateOptions{})
		cancel()
		if err == nil {
			w.ns = name
			w.logf("namespace %s created", name)
			return nil
		}
		if !apierrors.IsAlreadyExists(err) {
			break
		}
	}
	return fmt.Errorf("creating the benchmark namespace: %w", err)
}

// cleanup deletes the namespace even when the run was interrupted. A failure is a
// warning: the measurements are complete by then.
func (w *workload) cleanup() {
	if w.cfg.Keep {
		w.logf("keeping namespace %s (--keep)", w.ns)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	if err := w.cs.CoreV1().Namespaces().Delete(ctx, w.ns, metav1.DeleteOptions{}); err != nil {
		w.logf("WARNING: deleting namespace %s: %v", w.ns, err)
		return
	}
	w.logf("namespace %s deleted", w.ns)
}

func objectName(i int) string { return fmt.Sprintf("bench-%06d", i) }

var payload = strings.Repeat("x", 256)

func (w *workload) create(ctx context.Context) Result {
	w.created, w.versions = make([]bool, w.cfg.Objects), make([]string, w.cfg.Objects)
	res := w.runner().run(ctx, opCreate, w.cfg.Objects, func(ctx context.Context, i int) error {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: objectName(i), Labels: map[string]string{setLabel: objectsSet}},
			Data:       map[string]string{counterKey: "0", "payload": payload},
		}
		created, err := w.configMaps().Create(ctx, cm, metav1.CreateOptions{})
		if err == nil {
			w.created[i], w.versions[i] = true, created.ResourceVersion
		}
		return err
	})
	w.createdOK = res.Count - res.Errors
	return res
}

func (w *workload) get(ctx context.Context) Result {
	n := w.cfg.Gets
	if n == 0 {
		n = w.cfg.Objects
	}
	return w.runner().run(ctx, opGet, n, func(ctx context.Context, i int) error {
		cm, err := w.configMaps().Get(ctx, objectName(i%w.cfg.Objects), metav1.GetOptions{})
		if err == nil && cm.Name != objectName(i%w.cfg.Objects) {
			err = fmt.Errorf("get %s returned %q", objectName(i%w.cfg.Objects), cm.Name)
		}
		return err
	})
}

// list lists all the objects, page by page; an operation is one full list. A list
// that does not return every object that was created is a failure.
func (w *workload) list(ctx context.Context) Result {
	res := w.runner().run(ctx, opList, w.cfg.Lists, func(ctx context.Context, _ int) error {
		opts := metav1.ListOptions{LabelSelector: setLabel + "=" + objectsSet, Limit: w.cfg.ListPageSize}
		n, pages := 0, 0
		for {
			l, err := w.configMaps().List(ctx, opts)
			if err != nil {
				return fmt.Errorf("page %d: %w", pages+1, err)
			}
			n += len(l.Items)
			pages++
			if int64(len(l.Items)) > w.cfg.ListPageSize {
				return fmt.Errorf("page %d has %d items, more than the limit %d", pages, len(l.Items), w.cfg.ListPageSize)
			}
			if l.Continue == "" {
				break
			}
			opts.Continue = l.Continue
		}
		// A create that failed (e.g. timed out) may still have happened.
		if n < w.createdOK || n > w.cfg.Objects {
			return fmt.Errorf("list returned %d objects in %d pages, want %d", n, pages, w.createdOK)
		}
		return nil
	})
	res.Notes = append(res.Notes, fmt.Sprintf("page size %d", w.cfg.ListPageSize))
	return res
}

// update replaces every object the update-conflict phase left alone once, each from its
// version as created: one writer per object, so no conflicts (that phase has them).
func (w *workload) update(ctx context.Context) Result {
	rest := w.rest()
	return w.runner().run(ctx, opUpdate, len(rest), func(ctx context.Context, i int) error {
		i = rest[i]
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: objectName(i), Labels: map[string]string{setLabel: objectsSet}, ResourceVersion: w.versions[i]},
			Data:       map[string]string{counterKey: "0", "payload": payload, "updated": "true"},
		}
		_, err := w.configMaps().Update(ctx, cm, metav1.UpdateOptions{})
		return err
	})
}

// delete deletes the objects of the update phase (the counters stay, for --keep).
func (w *workload) delete(ctx context.Context) Result {
	rest := w.rest()
	return w.runner().run(ctx, opDelete, len(rest), func(ctx context.Context, i int) error {
		return w.configMaps().Delete(ctx, objectName(rest[i]), metav1.DeleteOptions{})
	})
}

// rest are the objects that were created and that the update-conflict phase leaves alone.
func (w *workload) rest() []int {
	var out []int
	for i := w.cfg.ConflictObjects; i < len(w.created); i++ {
		if w.created[i] {
			out = append(out, i)
		}
	}
	return out
}

// updateConflict has every worker do read-modify-write increments of the counters of
// the same few objects, retrying 409 Conflicts. A conflict is not a failure; giving
// up, any other error, or a lost increment is.
func (w *workload) updateConflict(ctx context.Context) Result {
	var conflicts atomic.Int64
	res := w.runner().run(ctx, opUpdateConflict, w.cfg.Updates, func(ctx context.Context, i int) error {
		return w.increment(ctx, objectName(i%w.cfg.ConflictObjects), &conflicts)
	})
	res.Conflicts = int(conflicts.Load())
	res.Notes = append(res.Notes, fmt.Sprintf("%d objects", w.cfg.ConflictObjects))
	if ctx.Err() == nil && res.Count > 0 {
		w.verifyCounters(ctx, &res)
	}
	return res
}

func (w *workload) increment(ctx context.Context, name string, conflicts *atomic.Int64) error {
	attempts := 0
	err := retry.RetryOnConflict(w.cfg.ConflictBackoff, func() error {
		attempts++
		cm, err := w.configMaps().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n, err := strconv.Atoi(cm.Data[counterKey])
		if err != nil {
			return fmt.Errorf("configmap %s: bad counter %q", name, cm.Data[counterKey])
		}
		cm.Data[counterKey] = strconv.Itoa(n + 1)
		_, err = w.configMaps().Update(ctx, cm, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			conflicts.Add(1)
		}
		return err
	})
	if apierrors.IsConflict(err) {
		return fmt.Errorf("gave up after %d conflicting attempts: %w", attempts, err)
	}
	return err
}

// verifyCounters checks that no successful increment was lost: the counters must add
// up to at least the number of successful updates (failed ones may have happened).
// Each lost increment is a failed operation.
func (w *workload) verifyCounters(ctx context.Context, res *Result) {
	sum := 0
	for i := range w.cfg.ConflictObjects {
		octx, cancel := context.WithTimeout(ctx, w.cfg.OpTimeout)
		cm, err := w.configMaps().Get(octx, objectName(i), metav1.GetOptions{})
		cancel()
		if err != nil {
			// A failure of its own only if no update failed (which may be why).
			if res.Errors == 0 {
				res.Errors = 1
			}
			res.ErrorSamples = append(res.ErrorSamples, ErrorSample{Message: "verifying counters: " + err.Error(), Count: 1})
			return
		}
		n, _ := strconv.Atoi(cm.Data[counterKey])
		sum += n
	}
	if ok := res.Count - res.Errors; sum < ok {
		lost := ok - sum
		res.Errors += lost
		msg := fmt.Sprintf("lost updates: counters add up to %d after %d successful increments", sum, ok)
		res.Notes = append(res.Notes, msg)
		res.ErrorSamples = append(res.ErrorSamples, ErrorSample{Message: msg, Count: lost})
	}
}
