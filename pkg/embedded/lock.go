package embedded

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// LockFileName is the file in a data directory whose lock says which process owns it.
const LockFileName = "apichain.lock"

// DirLock is a process's ownership of a data directory: an exclusive lock on its lock file,
// which holds the owner's PID. The kernel releases it when the process exits, however it
// exits.
type DirLock struct {
	f *os.File
}

// ErrDataDirInUse is LockDataDir's error (errors.Is) when another process holds the lock.
var ErrDataDirInUse = errors.New("data directory in use")

// inUseError names the owner and is ErrDataDirInUse.
type inUseError string

func (e inUseError) Error() string        { return string(e) }
func (e inUseError) Is(target error) bool { return target == ErrDataDirInUse }

// LockDataDir makes this process the owner of dir (created if missing), or fails at once,
// naming the process that owns it: an embedded etcd would otherwise wait, silently, on its
// database's lock until the owner exits.
func LockDataDir(dir string) (*DirLock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, LockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		owner := "another process"
		if data, err := os.ReadFile(path); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
				owner = "process " + strconv.Itoa(pid)
			}
		}
		return nil, inUseError(fmt.Sprintf("data directory %s is in use by %s (it holds %s): stop it, or give this one another --data-dir", dir, owner, path))
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0); err != nil {
		f.Close()
		return nil, err
	}
	return &DirLock{f: f}, nil
}

// Unlock gives the directory up.
func (l *DirLock) Unlock() {
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	_ = l.f.Close()
}
