package startgc

import (
	"os"
	"runtime/debug"
	"testing"
)

// Nothing in this test binary ends the hold, so the collector is still at Percent, and the
// percent from before is Go's (the test binary's GOGC, when the environment sets one).
func TestInitRelaxes(t *testing.T) {
	current := debug.SetGCPercent(100)
	debug.SetGCPercent(current)
	before, ok := Relaxed()
	if os.Getenv("GOGC") != "" {
		if ok {
			t.Fatalf("GOGC=%s is set, yet init relaxed the collector", os.Getenv("GOGC"))
		}
		return
	}
	if !ok || before != 100 || current != Percent {
		t.Fatalf("Relaxed() = %d, %v and the percent is %d; want 100, true and %d", before, ok, current, Percent)
	}
}
