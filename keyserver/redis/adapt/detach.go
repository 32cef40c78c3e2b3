// Package adapt helps write a [redis.Transport] over a Redis client that
// keyserver/redis does not ship: [Detach] for a client whose commands do
// not return when their context ends, [HookedPubSub] and [Confirm] for one
// that delivers Pub/Sub events to hooks. keyserver/rueidis and
// keyserver/valkey are built with them; keyserver/goredis pipelines and
// starts its commands itself.
package adapt

import (
	"context"
	"fmt"
	"sync"

	"github.com/goredlock/goredlock/keyserver/redis"
)

// Detach adapts a Transport whose Do may outlive its context, such as one
// over a client that bounds a command by its own timeouts only: each Do
// runs on a goroutine of its own, and returns when ctx ends while the
// command goes on in the background. Close waits for those commands, then
// closes t. The result has t's name (see redis.NewServer).
func Detach(t redis.Transport) redis.Transport { return &detached{Transport: t} }

type detached struct {
	redis.Transport
	running sync.WaitGroup
}

type reply struct {
	v   any
	err error
}

func (d *detached) Do(ctx context.Context, cmd, keys []string, args ...string) (any, error) {
	if ctx.Done() == nil { // a context that never ends needs no watching
		return d.Transport.Do(ctx, cmd, keys, args...)
	}
	replies := make(chan reply, 1)
	d.running.Add(1)
	go func() {
		defer d.running.Done()
		v, err := d.Transport.Do(ctx, cmd, keys, args...)
		replies <- reply{v, err}
	}()
	select {
	case r := <-replies:
		return r.v, r.err
	case <-ctx.Done():
		select {
		case r := <-replies: // answered as the context ended: the answer counts
			return r.v, r.err
		default:
			return nil, ctx.Err()
		}
	}
}

// Connections is t's count of its connections, when it keeps one (see
// [redis.ConnectionCounter]).
func (d *detached) Connections() (int64, bool) {
	if c, ok := d.Transport.(redis.ConnectionCounter); ok {
		return c.Connections()
	}
	return 0, false
}

// String names the server after t, when t has a name.
func (d *detached) String() string {
	if n, ok := d.Transport.(fmt.Stringer); ok {
		return n.String()
	}
	return ""
}

func (d *detached) Close() error {
	d.running.Wait()
	return d.Transport.Close()
}
