package redis

import (
	"context"
	"errors"
	"sync"
	"time"

	redigo "github.com/gomodule/redigo/redis"
)

// borrowedConn is the connection of the caller's Pool that New's shared
// pipeline holds: the pipeline's writer sends on it while its reader
// receives, and either may close it. A connection from a redigo.Pool
// cannot be closed that way: its Close reads the replies still due itself,
// racing the reader, and gives the connection back to the pool while the
// reader still reads it. Close here closes the network connection first
// (kill), waits until no send or receive is in progress, and only then
// gives the connection back, which the pool, seeing it failed, discards.
type borrowedConn struct {
	rc redigo.Conn

	mu     sync.Mutex
	closed bool
	busy   sync.WaitGroup // sends, flushes and receives in progress
	once   sync.Once
	err    error // Close's
}

// errGivenBack is what a borrowed connection answers once it has been
// closed and given back to its pool.
var errGivenBack = errors.New("redis: the connection was given back to its pool")

// borrow takes a connection from pool for the shared pipeline.
func borrow(pool Pool) func(context.Context) (redigo.Conn, error) {
	return func(ctx context.Context) (redigo.Conn, error) {
		rc, err := pool.GetContext(ctx)
		if err != nil {
			return nil, err
		}
		return &borrowedConn{rc: rc}, nil
	}
}

// enter marks a use of the connection, unless it is closed.
func (b *borrowedConn) enter() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.busy.Add(1)
	return true
}

func (b *borrowedConn) Send(cmd string, args ...any) error {
	if !b.enter() {
		return errGivenBack
	}
	defer b.busy.Done()
	return b.rc.Send(cmd, args...)
}

func (b *borrowedConn) Flush() error {
	if !b.enter() {
		return errGivenBack
	}
	defer b.busy.Done()
	return b.rc.Flush()
}

func (b *borrowedConn) Receive() (any, error) {
	if !b.enter() {
		return nil, errGivenBack
	}
	defer b.busy.Done()
	return b.rc.Receive()
}

// ReceiveWithTimeout receives with timeout bounding the read (0: none),
// or with the connection's read timeout when it cannot be bounded so.
func (b *borrowedConn) ReceiveWithTimeout(timeout time.Duration) (any, error) {
	if !b.enter() {
		return nil, errGivenBack
	}
	defer b.busy.Done()
	if _, ok := b.rc.(redigo.ConnWithTimeout); !ok {
		return b.rc.Receive()
	}
	return redigo.ReceiveWithTimeout(b.rc, timeout)
}

// DoWithTimeout is not used by the pipeline; it is here so that
// borrowedConn is a ConnWithTimeout, whose ReceiveWithTimeout the
// pipeline's reader calls.
func (b *borrowedConn) DoWithTimeout(timeout time.Duration, cmd string, args ...any) (any, error) {
	if !b.enter() {
		return nil, errGivenBack
	}
	defer b.busy.Done()
	return redigo.DoWithTimeout(b.rc, timeout, cmd, args...)
}

func (b *borrowedConn) Do(cmd string, args ...any) (any, error) {
	if !b.enter() {
		return nil, errGivenBack
	}
	defer b.busy.Done()
	return b.rc.Do(cmd, args...)
}

func (b *borrowedConn) Err() error {
	if !b.enter() {
		return errGivenBack
	}
	defer b.busy.Done()
	return b.rc.Err()
}

// Close closes the network connection, waits for the sends and receives
// in progress, which it ends, and gives the connection back. A connection
// without ConnWithContext cannot be closed under them: it is closed and
// given back at once, as Pool's Close does.
func (b *borrowedConn) Close() error {
	b.once.Do(func() {
		b.mu.Lock()
		b.closed = true
		b.mu.Unlock()
		if cc, ok := b.rc.(redigo.ConnWithContext); ok {
			kill(cc)
			b.busy.Wait()
		}
		b.err = b.rc.Close()
	})
	return b.err
}
