package redis

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

var _ keyserver.Incarnator = (*Server)(nil)

// incarnation is what a Server last read of its Redis's life (INFO's run_id
// and uptime, CONFIG's appendonly and appendfsync), read again only after a
// new connection (a restart breaks them all: see ConnectionCounter) or a failed read.
type incarnation struct {
	mu      sync.Mutex
	read    bool // id, up, readAt, durable and dials hold a good read
	id      string
	up      time.Duration // uptime when read
	readAt  time.Time
	durable bool
	dials   int64         // the transport's connections opened when read
	reading chan struct{} // while a read runs; closed when it ends
}

// Incarnation reports how long the Redis this Server reaches has been up,
// and whether it persists every write (appendonly yes and appendfsync
// always; a server whose CONFIG an ACL denies counts as not durable).
func (s *Server) Incarnation(ctx context.Context) (keyserver.Incarnation, error) {
	if err := s.enter(ctx, "incarnation", ""); err != nil {
		return keyserver.Incarnation{}, err
	}
	defer s.inflight.Done()
	in := &s.inc
	dials, counted := s.dials()
	if !counted {
		return s.readIncarnation(ctx, dials)
	}
	for {
		in.mu.Lock()
		if v, ok := in.knownLocked(dials); ok {
			in.mu.Unlock()
			return v, nil
		}
		if wait := in.reading; wait != nil {
			in.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return keyserver.Incarnation{}, s.fail("incarnation", "", ctx.Err())
			}
		}
		done := make(chan struct{})
		in.reading = done
		in.mu.Unlock()
		v, err := s.readIncarnation(ctx, dials)
		in.mu.Lock()
		in.reading = nil
		in.mu.Unlock()
		close(done)
		return v, err
	}
}

// knownIncarnation returns the incarnation last read if it is up to date
// (see incarnation), without reading it: false when it must be read.
func (s *Server) knownIncarnation() (keyserver.Incarnation, bool) {
	dials, counted := s.dials()
	if !counted {
		return keyserver.Incarnation{}, false
	}
	s.inc.mu.Lock()
	defer s.inc.mu.Unlock()
	return s.inc.knownLocked(dials)
}

// knownLocked returns the incarnation last read, if it is up to date with
// dials, the transport's connections opened now. in.mu must be held.
func (in *incarnation) knownLocked(dials int64) (keyserver.Incarnation, bool) {
	if !in.read || dials != in.dials {
		return keyserver.Incarnation{}, false
	}
	return keyserver.Incarnation{ID: in.id, Up: in.up + time.Since(in.readAt), Durable: in.durable}, true
}

// readIncarnation reads INFO server, and CONFIG when the run id is new,
// and keeps what it read.
func (s *Server) readIncarnation(ctx context.Context, dials int64) (keyserver.Incarnation, error) {
	in := &s.inc
	readAt := time.Now()
	id, up, err := s.info(ctx)
	if err != nil {
		return keyserver.Incarnation{}, err
	}
	in.mu.Lock()
	durable, known := in.durable, in.read && in.id == id
	in.mu.Unlock()
	if !known {
		if durable, err = s.durable(ctx); err != nil {
			return keyserver.Incarnation{}, err
		}
	}
	// uptime_in_seconds, a difference of whole seconds, can overstate by up
	// to a second: take it off, or a quarantine measured from it ends early.
	up = max(up-time.Second, 0)
	if now, counted := s.dials(); counted && dials == 0 && now == 1 {
		// The read opened the transport's first and only connection, which a
		// restart since would have broken: it is up to date (one read, not two).
		dials = now
	}
	in.mu.Lock()
	in.read, in.id, in.up, in.readAt, in.durable, in.dials = true, id, up, readAt, durable, dials
	in.mu.Unlock()
	return keyserver.Incarnation{ID: id, Up: up + time.Since(readAt), Durable: durable}, nil
}

// durable reports whether Redis persists every write before it answers (one
// CONFIG GET, or one per parameter where Redis 6 refuses both at once). A
// refused CONFIG GET (an ACL) counts as not durable; a failed call is an error.
func (s *Server) durable(ctx context.Context) (bool, error) {
	want := [][2]string{{"appendonly", "yes"}, {"appendfsync", "always"}}
	ok, refused, err := s.configIs(ctx, want...)
	if !refused {
		return ok, err
	}
	for _, w := range want {
		if ok, _, err := s.configIs(ctx, w); !ok {
			return false, err
		}
	}
	return true, nil
}

// configIs reports whether every parameter of want has its value, with
// one CONFIG GET, or that Redis refused the command.
func (s *Server) configIs(ctx context.Context, want ...[2]string) (ok, refused bool, err error) {
	params := make([]string, len(want))
	for i, w := range want {
		params[i] = w[0]
	}
	reply, err := s.t.Do(ctx, []string{"CONFIG", "GET"}, nil, params...)
	if _, isReply := s.t.ReplyText(err); isReply {
		return false, true, nil
	}
	if err != nil {
		return false, false, s.fail("incarnation", "", err)
	}
	for _, w := range want {
		if got, ok := configValue(reply, w[0]); !ok || got != w[1] {
			return false, false, nil
		}
	}
	return true, false, nil
}

// configValue reads param's value in a reply to CONFIG GET: a list of
// names and values (RESP2), or a map (RESP3, which go-redis, rueidis and
// valkey-go speak and return as Go maps of their own types).
func configValue(reply any, param string) (string, bool) {
	if pairs, ok := reply.([]any); ok {
		for i := 0; i+1 < len(pairs); i += 2 {
			if pairs[i] == param {
				v, ok := pairs[i+1].(string)
				return v, ok
			}
		}
		return "", false
	}
	m := reflect.ValueOf(reply)
	if m.Kind() != reflect.Map {
		return "", false
	}
	for it := m.MapRange(); it.Next(); {
		if fmt.Sprint(it.Key().Interface()) == param {
			return fmt.Sprint(it.Value().Interface()), true
		}
	}
	return "", false
}

// dials returns how many connections the transport has opened, and false
// when it cannot tell.
func (s *Server) dials() (int64, bool) {
	if s.counter == nil {
		return 0, false
	}
	return s.counter.Connections()
}
