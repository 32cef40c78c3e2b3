package adapt_test

import (
	"github.com/goredlock/goredlock/keyserver/redis"
	"github.com/goredlock/goredlock/keyserver/redis/adapt"
)

// A transport over a client whose commands run until its own timeouts,
// whatever their context, is detached: each call returns when the redlock
// client's per-server timeout ends.
func ExampleDetach() {
	var t redis.Transport = clientTransport() // Do, ReplyText, PubSub, Close
	srv := redis.NewServer(adapt.Detach(t), redis.WithName("10.0.0.1:6379"))
	defer srv.Close() // waits for the commands still running, then closes t
	_ = srv           // one of the servers given to redlock.New
}

// clientTransport stands for a Transport over another Redis client.
func clientTransport() redis.Transport { return newSlow() }
