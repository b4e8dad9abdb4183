//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package certs

import (
	"fmt"
	"os"
	"syscall"
)

// lockFile takes an exclusive advisory lock so services started together
// on one data directory do not each create their own CA.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, keyFileMode)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	// Closing the descriptor releases the lock.
	return func() { _ = f.Close() }, nil
}
