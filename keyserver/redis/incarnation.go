package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goredlock/goredlock/internal/check"
	"github.com/goredlock/goredlock/internal/layout"
	"github.com/goredlock/goredlock/keyserver"
)

var _ keyserver.Incarnator = (*Server)(nil)

// incarnation is what a Server last read of its Redis's life (its marker,
// INFO's run_id and uptime, CONFIG's appendonly and appendfsync), read
// again only after a new connection (a restart breaks them all: see
// ConnectionCounter) or a failed read.
type incarnation struct {
	mu      sync.Mutex
	read    bool // id, up, readAt, durable and dials hold a good read
	id      string
	up      time.Duration // uptime when read
	readAt  time.Time
	durable bool
	dials   int64         // the transport's connections opened when read
	reading chan struct{} // while a read runs; closed when it ends

	infoDenied atomic.Bool // an ACL denies INFO: not asked again
}

// Incarnation reports how long the Redis this Server reaches has held its
// data (the age of its marker, lowered to its uptime when it loaded its
// data from disk at start), and whether it persists every write
// (appendonly yes and appendfsync always; a server whose CONFIG an ACL
// denies counts as not durable). A replica is refused here, by name: its
// grants would be lost in a failover, or never replicated back.
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

// readIncarnation reads the store's marker, INFO (where an ACL allows it)
// and CONFIG, all at once (one round trip on a pipelined connection), and
// keeps what it read. The marker is what the quarantine rests on: a store
// loses it with its data, and the age it gives is read on the store's own
// clock, so that a process started after a restart knows of it ("Which
// restarts" in docs/design.md).
func (s *Server) readIncarnation(ctx context.Context, dials int64) (keyserver.Incarnation, error) {
	s.startScriptingCheck(ctx) // the first write's, meanwhile
	var (
		wg      sync.WaitGroup
		id      string
		up      time.Duration
		srv     serverInfo
		durable bool
		errs    [3]error
	)
	wg.Add(2)
	go func() {
		defer wg.Done()
		id, up, errs[0] = s.marker(ctx)
	}()
	go func() {
		defer wg.Done()
		srv, errs[1] = s.info(ctx)
	}()
	durable, errs[2] = s.durable(ctx)
	wg.Wait()
	if err := firstError(errs[:]); err != nil {
		return keyserver.Incarnation{}, err
	}
	// Aged from the answers, not the asking: never older than the truth.
	readAt := time.Now()
	if srv.runID != "" {
		// A restart that loaded its data from disk keeps the marker and
		// loses what came after the last save: the run id tells it.
		id += "/" + srv.runID
		if srv.loaded {
			// uptime_in_seconds, a difference of whole seconds, can
			// overstate by up to a second: take it off.
			up = min(up, max(srv.up-time.Second, 0))
		}
	}
	if now, counted := s.dials(); counted && dials == 0 && now == 1 {
		// The read opened the transport's first and only connection, which a
		// restart since would have broken: it is up to date (one read, not two).
		dials = now
	}
	in := &s.inc
	in.mu.Lock()
	in.read, in.id, in.up, in.readAt, in.durable, in.dials = true, id, up, readAt, durable, dials
	in.mu.Unlock()
	return keyserver.Incarnation{ID: id, Up: up + time.Since(readAt), Durable: durable}, nil
}

// together runs reads at once where the transport pipelines them over one
// connection (one round trip for all), and one after another elsewhere,
// where each would take a connection of its own.
func (s *Server) together(reads ...func()) {
	if _, pipelined := s.t.(pipelinedTransport); !pipelined {
		for _, r := range reads {
			r()
		}
		return
	}
	var wg sync.WaitGroup
	for _, r := range reads[1:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r()
		}()
	}
	reads[0]()
	wg.Wait()
}

// firstError returns the first of errs that is not nil: the marker's
// before INFO's, so that a replica is named by its refusal to write.
func firstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
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

// marker returns the store's marker (layout.IncarnationKey), set first if
// absent: its ID, and how long ago it was set, on the store's clock (its
// TTL left, read at the same time: a key still absent when PTTL ran was
// set just now). A replica refuses the write, and is refused by name (see
// fail).
func (s *Server) marker(ctx context.Context) (id string, age time.Duration, err error) {
	var b [12]byte
	rand.Read(b[:]) //nolint:errcheck // never fails (crypto/rand)
	mine := hex.EncodeToString(b[:])
	keys := []string{layout.IncarnationKey}
	var (
		reply, pttl any
		perr        error
	)
	ttl := strconv.FormatInt(layout.IncarnationTTL.Milliseconds(), 10)
	s.together(func() {
		reply, err = s.t.Do(ctx, []string{"SET"}, keys, mine, "NX", "PX", ttl, "GET")
		if msg, ok := s.t.ReplyText(err); ok && strings.Contains(msg, "syntax") {
			// Redis before 7.0 and miniredis take NX and GET apart.
			if _, err = s.t.Do(ctx, []string{"SET"}, keys, mine, "NX", "PX", ttl); err == nil {
				reply, err = s.t.Do(ctx, []string{"GET"}, keys)
				if reply == mine {
					reply = nil
				}
			}
		}
	}, func() {
		pttl, perr = s.t.Do(ctx, []string{"PTTL"}, keys)
	})
	if err == nil {
		err = perr
	}
	if err != nil {
		return "", 0, s.fail("incarnation", "", err)
	}
	if reply == nil { // absent: set now
		return mine, 0, nil
	}
	id, _ = reply.(string)
	left, ok := pttl.(int64)
	switch {
	case id == "" || !ok:
		return "", 0, s.fail("incarnation", layout.IncarnationKey, fmt.Errorf("unexpected replies %v and %v (not a goredlock marker)", reply, pttl))
	case left == -2: // absent when PTTL ran, before the SET: set just now
		return id, 0, nil
	case left < 0:
		return "", 0, s.fail("incarnation", layout.IncarnationKey, errors.New("the marker has no TTL (set by hand?): its age cannot be read"))
	}
	// The TTL left is in whole milliseconds of the store's clock: take one
	// off, so that the age never overstates.
	return id, max(layout.IncarnationTTL-time.Duration(left+1)*time.Millisecond, 0), nil
}

// errReplica is what a replica given as a key server fails with.
var errReplica = errors.New("is a replica: a replica cannot be a key server (its grants are lost in a failover); give its master")

// serverInfo is what INFO says of a Redis's life; zero where an ACL denies
// INFO (the marker alone then tells restarts).
type serverInfo struct {
	runID  string
	up     time.Duration
	loaded bool // it loaded data from disk when it started, or keeps an AOF
}

// info reads INFO's default sections. A replica, or a KeyDB active
// replica (two masters of one data set), is refused by name.
func (s *Server) info(ctx context.Context) (serverInfo, error) {
	if s.inc.infoDenied.Load() {
		return serverInfo{}, nil
	}
	reply, err := s.t.Do(ctx, []string{"INFO"}, nil)
	if msg, ok := s.t.ReplyText(err); ok && (strings.HasPrefix(msg, "NOPERM") || strings.Contains(msg, "unknown command")) {
		s.inc.infoDenied.Store(true)
		return serverInfo{}, nil
	}
	if err != nil {
		return serverInfo{}, s.fail("incarnation", "", err)
	}
	text, ok := reply.(string)
	if !ok {
		return serverInfo{}, s.fail("incarnation", "", fmt.Errorf("unexpected reply %T to INFO", reply))
	}
	var in serverInfo
	haveUp := false
	for _, line := range strings.Split(text, "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
		switch k {
		case "run_id":
			in.runID = v
		case "uptime_in_seconds":
			secs, perr := strconv.ParseInt(v, 10, 64)
			in.up, haveUp = time.Duration(secs)*time.Second, perr == nil && secs >= 0
		case "rdb_last_load_keys_loaded":
			in.loaded = in.loaded || (v != "" && v != "0")
		case "aof_enabled":
			in.loaded = in.loaded || v == "1"
		case "role":
			switch v {
			case "slave", "replica":
				return serverInfo{}, s.fail("incarnation", "", check.Permanent(errReplica))
			case "active-replica":
				return serverInfo{}, s.fail("incarnation", "", check.Permanent(errors.New(
					"is an active replica (KeyDB multi-master): two masters of one data set can each grant a lock")))
			}
		}
	}
	if in.runID == "" || !haveUp {
		return serverInfo{}, nil // not Redis's INFO: the marker alone tells
	}
	return in, nil
}
