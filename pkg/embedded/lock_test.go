package embedded

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A data directory has one owner: a second lock fails at once, naming the owner's PID, and
// the directory is free again once the owner lets go.
func TestLockDataDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	first, err := LockDataDir(dir)
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(dir, LockFileName))
	require.NoError(t, err)
	assert.Equal(t, strconv.Itoa(os.Getpid()), strings.TrimSpace(string(data)))

	_, err = LockDataDir(dir)
	require.Error(t, err)
	assert.Equal(t, "data directory "+dir+" is in use by process "+strconv.Itoa(os.Getpid())+" (it holds "+
		filepath.Join(dir, LockFileName)+"): stop it, or give this one another --data-dir", err.Error())

	first.Unlock()
	second, err := LockDataDir(dir)
	require.NoError(t, err)
	second.Unlock()
}

// Starting etcd on a directory whose database another member holds waits on its lock; a
// cancelled context ends the wait.
func TestStartEtcdHonoursContext(t *testing.T) {
	dir := t.TempDir()
	first, err := StartEtcd(context.Background(), dir, 0, 0)
	require.NoError(t, err)
	defer first.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err = StartEtcd(ctx, dir, 0, 0)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "etcd: not started")
}
