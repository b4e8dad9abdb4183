package server

import (
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/apichain/apichain/pkg/startgc"
)

// startupGCPercent is the GC percent while a process starts. A starting process allocates
// several times its small live heap (etcd, the schemes, the first lists and bootstrap
// writes): at Go's default of 100 it collects eight times before it is ready, each
// collection taking a quarter of the two cores and assisting allocations, about a fifth of
// the CPU a start takes. At 400 the heap may grow to five times what is live before a
// collection, still bounded by it.
const startupGCPercent = startgc.Percent

// gcHold counts what is starting: while anything is, the GC percent is startupGCPercent;
// when the last is done, it is what it was.
type gcHold struct {
	set  func(percent int) (prev int) // debug.SetGCPercent
	mu   sync.Mutex
	n    int
	prev int
}

var startupGC = &gcHold{set: debug.SetGCPercent}

// releaseInitGC ends the hold package initialisation took (startgc), if it took one.
var releaseInitGC = func() {}

// initGCHoldLimit ends the initialisation's hold in a program that never calls
// ReleaseInitGC (one that imports this package without running a process).
const initGCHoldLimit = 10 * time.Second

func init() {
	if before, ok := startgc.Relaxed(); ok {
		startupGC.n, startupGC.prev = 1, before
		releaseInitGC = startupGC.releaser()
		time.AfterFunc(initGCHoldLimit, releaseInitGC)
	}
}

// ReleaseInitGC ends the hold package initialisation took; a process calls it once it holds
// the collector itself (HoldStartupGC), so the hold spans the process's start from its
// first package initialisation.
func ReleaseInitGC() { releaseInitGC() }

// HoldStartupGC relaxes the garbage collector until release is called (more than once is
// fine). Holds nest: the process holds it while its modules start, and every Server from
// New until it is first ready or stops. GOGC set in the environment is left as it is.
func HoldStartupGC() (release func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	return startupGC.hold()
}

func (g *gcHold) hold() (release func()) {
	g.mu.Lock()
	if g.n == 0 {
		g.prev = g.set(startupGCPercent)
	}
	g.n++
	g.mu.Unlock()
	return g.releaser()
}

// releaser is the release of one hold.
func (g *gcHold) releaser() (release func()) {
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			if g.n--; g.n == 0 {
				g.set(g.prev)
			}
			g.mu.Unlock()
		})
	}
}
