package redigotransport

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

// use runs f, a use of the connection, unless it has been closed.
func (b *borrowedConn) use(f func() (any, error)) (any, error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, errGivenBack
	}
	b.busy.Add(1)
	b.mu.Unlock()
	defer b.busy.Done()
	return f()
}

func (b *borrowedConn) Send(cmd string, args ...any) error {
	_, err := b.use(func() (any, error) { return nil, b.rc.Send(cmd, args...) })
	return err
}

func (b *borrowedConn) Flush() error {
	_, err := b.use(func() (any, error) { return nil, b.rc.Flush() })
	return err
}

func (b *borrowedConn) Err() error {
	_, err := b.use(func() (any, error) { return nil, b.rc.Err() })
	return err
}

func (b *borrowedConn) Receive() (any, error) { return b.use(b.rc.Receive) }

func (b *borrowedConn) Do(cmd string, args ...any) (any, error) {
	return b.use(func() (any, error) { return b.rc.Do(cmd, args...) })
}

// ReceiveWithTimeout and DoWithTimeout make borrowedConn a
// ConnWithTimeout, whose ReceiveWithTimeout the pipeline's reader calls
// (timeout 0: no bound); they fail as redigo's do when the pool's
// connection is no ConnWithTimeout.
func (b *borrowedConn) ReceiveWithTimeout(timeout time.Duration) (any, error) {
	return b.use(func() (any, error) { return redigo.ReceiveWithTimeout(b.rc, timeout) })
}

func (b *borrowedConn) DoWithTimeout(timeout time.Duration, cmd string, args ...any) (any, error) {
	return b.use(func() (any, error) { return redigo.DoWithTimeout(b.rc, timeout, cmd, args...) })
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
