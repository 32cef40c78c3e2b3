package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	redigo "github.com/gomodule/redigo/redis"
)

// statusTimeout bounds how long status waits for each server: connecting,
// then two reads.
const statusTimeout = 2 * time.Second

// holding is what one server says of the lock's key.
type holding struct {
	addr  string
	held  bool
	left  time.Duration // the key's remaining TTL; negative when it has none
	value string        // compared across servers, never printed: it is the holder's token
	runID string        // the Redis process's run id: one Redis named twice answers with one
	err   error
}

// status is redlock status: what each server holds under NAME, read
// without writing anything.
//
// The key servers have no read call (a lock client never needs one), so
// status opens a connection of its own to each server and asks PTTL and
// GET: read-only commands that leave the key, and the lock, as they are.
func (t *tool) status(args []string) error {
	cfg, err := parseStatus("status", args, t.getenv)
	if err != nil {
		return err
	}
	// FromURL checks the URLs offline, so that a bad one is a usage error
	// with no server contacted, and names each server by host:port.
	srv, err := openServers(cfg.servers)
	if err != nil {
		return err
	}
	addrs := srv.addrs
	_ = srv.close() // never used for a call

	hs := make([]holding, len(cfg.servers))
	ctx, cancel := context.WithTimeout(context.Background(), statusTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for i, u := range cfg.servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hs[i] = read(ctx, u, addrs[i], cfg.name)
		}()
	}
	wg.Wait()
	if err := oneStoreTwice(hs); err != nil {
		return err
	}

	holders := map[string]int{} // token → servers holding it
	label := map[string]int{}   // token → its number in the output, when there are several
	failed := 0
	for _, h := range hs {
		switch {
		case h.err != nil:
			failed++
		case h.held:
			if holders[h.value]++; holders[h.value] == 1 {
				label[h.value] = len(label) + 1
			}
		}
	}
	for _, h := range hs {
		fmt.Fprintln(t.stdout, describe(h, label))
	}

	n := len(hs)
	quorum := n/2 + 1
	most := 0
	for _, c := range holders {
		most = max(most, c)
	}
	switch {
	case most >= quorum:
		return &exitError{code: exitHeld}
	case most+failed >= quorum:
		// The servers that failed could complete a quorum. Their lines
		// say why: no answer, or an error reply.
		return failf(exitUnavailable, "could not read lock %q on %d of %d servers (see their errors): too few to tell whether a quorum (%d) holds it",
			cfg.name, failed, n, quorum)
	}
	return nil
}

// oneStoreTwice fails, as a usage error, when two of the servers given
// are one Redis under two names (127.0.0.1 and localhost): its answer
// would count twice toward a quorum.
func oneStoreTwice(hs []holding) error {
	for i := range hs {
		for j := range i {
			if hs[i].runID != "" && hs[i].runID == hs[j].runID {
				return badf("servers %s and %s are one Redis, whose answer would count twice; Redlock needs independent servers", hs[j].addr, hs[i].addr)
			}
		}
	}
	return nil
}

// infoField returns field's value in an INFO reply, or "".
func infoField(info, field string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return ""
}

// describe is h's line of output: host:port, then "held" and the time
// left, "free", or "error:" and why.
func describe(h holding, label map[string]int) string {
	switch {
	case h.err != nil:
		return h.addr + " error: " + oneLine(h.err.Error())
	case !h.held:
		return h.addr + " free"
	}
	s := h.addr + " held "
	if h.left < 0 {
		s += "(no expiry)"
	} else {
		s += h.left.String()
	}
	if len(label) > 1 {
		s += " by holder " + strconv.Itoa(label[h.value])
	}
	return s
}

// read asks one server for the key's remaining TTL and value.
func read(ctx context.Context, rawurl, addr, key string) holding {
	h := holding{addr: addr}
	opts := []redigo.DialOption{
		redigo.DialConnectTimeout(statusTimeout),
		redigo.DialTLSHandshakeTimeout(statusTimeout), // redigo's own bound is 10s, and ctx does not end it
		redigo.DialReadTimeout(statusTimeout),
		redigo.DialWriteTimeout(statusTimeout),
	}
	// redigo reads the database from the URL's path only; FromURL also
	// takes ?db=, and has checked that the two agree.
	if u, err := url.Parse(rawurl); err == nil {
		if db, err := strconv.Atoi(u.Query().Get("db")); err == nil && db != 0 {
			opts = append(opts, redigo.DialDatabase(db))
		}
	}
	conn, err := redigo.DialURLContext(ctx, rawurl, opts...)
	if err != nil {
		h.err = fmt.Errorf("connecting: %w", err)
		return h
	}
	defer conn.Close()
	if info, err := redigo.String(redigo.DoContext(conn, ctx, "INFO", "server")); err == nil {
		h.runID = infoField(info, "run_id")
	}
	ms, err := redigo.Int64(redigo.DoContext(conn, ctx, "PTTL", key))
	if err != nil {
		h.err = err
		return h
	}
	if ms == -2 { // no such key
		return h
	}
	value, err := redigo.String(redigo.DoContext(conn, ctx, "GET", key))
	switch {
	case errors.Is(err, redigo.ErrNil): // expired between the two reads
		return h
	case err != nil:
		h.err = err
		return h
	}
	h.held, h.value, h.left = true, value, time.Duration(ms)*time.Millisecond
	return h
}
