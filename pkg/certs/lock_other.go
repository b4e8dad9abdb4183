//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package certs

// lockFile is a no-op where flock is unavailable; the in-process mutex in
// EnsurePKI still serialises callers within one process.
func lockFile(string) (unlock func(), err error) {
	return func() {}, nil
}
