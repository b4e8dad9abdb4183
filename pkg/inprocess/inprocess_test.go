package inprocess

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// echo serves l: every connection gets back what it sends.
func echo(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			_, _ = io.Copy(c, c)
		}()
	}
}

func roundTrip(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	_, err := c.Write([]byte(msg))
	require.NoError(t, err)
	got := make([]byte, len(msg))
	_, err = io.ReadFull(c, got)
	require.NoError(t, err)
	assert.Equal(t, msg, string(got))
}

// A process's dial to an address it listens on goes through memory, to the same server that
// takes TCP connections; another address is dialled over TCP; once the listener is closed,
// its address is dialled over TCP again.
func TestDialInMemoryOnlyToOwnAddresses(t *testing.T) {
	ctx := context.Background()
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	l := Listen(tcp, "backend.example:7443")
	go echo(l)

	for _, addr := range []string{tcp.Addr().String(), "backend.example:7443"} {
		c, err := Dial(ctx, addr)
		require.NoError(t, err)
		_, inMemory := c.RemoteAddr().(*net.TCPAddr)
		assert.False(t, inMemory, "%s is this process's: not over TCP", addr)
		roundTrip(t, c, "in memory to "+addr)
		c.Close()
	}
	c, err := net.Dial("tcp", tcp.Addr().String())
	require.NoError(t, err)
	roundTrip(t, c, "over TCP") // the same listener takes TCP connections too
	c.Close()

	other, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer other.Close()
	go echo(other)
	c, err = Dial(ctx, other.Addr().String())
	require.NoError(t, err)
	assert.IsType(t, &net.TCPAddr{}, c.RemoteAddr(), "not this process's: over TCP")
	roundTrip(t, c, "to another process")
	c.Close()

	require.NoError(t, l.Close())
	_, err = l.Accept()
	assert.ErrorIs(t, err, net.ErrClosed)
	_, err = Dial(ctx, tcp.Addr().String())
	assert.Error(t, err, "closed: dialled over TCP, where nothing listens")
	_, err = Dial(ctx, "backend.example:7443")
	assert.Error(t, err, "closed: no longer taken in memory")
}
