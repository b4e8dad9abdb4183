// Package startgc relaxes the garbage collector from the first package initialisations of a
// process. It imports nothing but the runtime's own packages, so it is initialised before the
// kube libraries' schemes, registries and OpenAPI definitions, which allocate most of what
// initialisation allocates (at Go's default the collector ran three times before main, about
// 10-15 ms of a start). pkg/server takes the hold over from it and ends it when the process is
// ready; GOGC set in the environment is left as it is.
package startgc

import (
	"os"
	"runtime/debug"
)

// Percent is the GC percent while a process starts.
const Percent = 400

var before, relaxed = 0, false

func init() {
	if os.Getenv("GOGC") == "" {
		before, relaxed = debug.SetGCPercent(Percent), true
	}
}

// Relaxed reports whether initialisation relaxed the collector, and the GC percent from
// before it did.
func Relaxed() (percentBefore int, ok bool) { return before, relaxed }
