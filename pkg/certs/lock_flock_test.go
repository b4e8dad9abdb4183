//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package certs

import (
	"path/filepath"
	"testing"
	"time"
)

// Two lockFile calls in one process use separate descriptors, which flock
// treats like separate processes; this checks the second one waits.
func TestLockFileExcludes(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".lock")
	unlock, err := lockFile(path)
	if err != nil {
		t.Fatal(err)
	}
	acquired := make(chan func())
	go func() {
		u, err := lockFile(path)
		if err != nil {
			t.Error(err)
			u = func() {}
		}
		acquired <- u
	}()
	select {
	case <-acquired:
		t.Fatal("second lock acquired while first held")
	case <-time.After(100 * time.Millisecond):
	}
	unlock()
	select {
	case u := <-acquired:
		u()
	case <-time.After(5 * time.Second):
		t.Fatal("second lock not acquired after unlock")
	}
}
