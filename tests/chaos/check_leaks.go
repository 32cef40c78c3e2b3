package chaos

import (
	"fmt"
	"runtime"
	"strings"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	"go.uber.org/goleak"

	"github.com/goredlock/goredlock/internal/layout"
	"github.com/goredlock/goredlock/keyserver"
)

// The leak checks run once every client of a run has been closed. Their
// waits allow for what is still legitimately winding down: connections
// the servers have not yet seen close, goroutines on their way out.
const (
	settleWait = 5 * time.Second
	pollEvery  = 20 * time.Millisecond
)

// goroutineBaseline remembers the goroutines running before a run. The
// check compares goroutines by identity, not by count: a count taken while
// earlier goroutines were still ending would hide new ones.
type goroutineBaseline struct {
	n      int
	ignore goleak.Option
}

func takeGoroutineBaseline() goroutineBaseline {
	return goroutineBaseline{n: runtime.NumGoroutine(), ignore: goleak.IgnoreCurrent()}
}

// check waits up to wait for every goroutine started since the baseline to
// end, and reports the ones still running if some do not.
func (b goroutineBaseline) check(wait time.Duration) []Violation {
	deadline := time.Now().Add(wait)
	for {
		err := goleak.Find(b.ignore) // retries for a moment itself
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return []Violation{{Kind: GoroutineLeak, Detail: fmt.Sprintf(
				"goroutines still running %v after every client closed (%d now, %d before the run): %s",
				wait, runtime.NumGoroutine(), b.n, clip(err.Error(), 2000))}}
		}
		time.Sleep(pollEvery)
	}
}

// checkConns waits up to wait for the proxies to carry no connection and
// for each node to have no client but the checker, and reports the
// connections left open.
func checkConns(nodes []string, proxies []*Proxy, wait time.Duration) []Violation {
	deadline := time.Now().Add(wait)
	for {
		var vs []Violation
		for i, p := range proxies {
			if n := p.Open(); n > 0 {
				vs = append(vs, Violation{Kind: ConnLeak, Detail: fmt.Sprintf("proxy %d (to %s) still carries %d connections", i, p.target, n)})
			}
		}
		for i, addr := range nodes {
			clients, err := clientList(addr)
			switch {
			case err != nil:
				vs = append(vs, Violation{Kind: ConnLeak, Detail: fmt.Sprintf("node %d: CLIENT LIST: %v", i, err)})
			case len(clients) > 0:
				vs = append(vs, Violation{Kind: ConnLeak, Detail: fmt.Sprintf("node %d: %d clients connected: %s",
					i, len(clients), clip(strings.Join(clients, "; "), 500))})
			}
		}
		if len(vs) == 0 || time.Now().After(deadline) {
			return vs
		}
		time.Sleep(pollEvery)
	}
}

// clientList returns the address and last command of every client of the
// node at addr except the connection asking.
func clientList(addr string) ([]string, error) {
	conn, err := dialNode(addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	self, err := redigo.Int64(conn.Do("CLIENT", "ID"))
	if err != nil {
		return nil, err
	}
	list, err := redigo.String(conn.Do("CLIENT", "LIST"))
	if err != nil {
		return nil, err
	}
	var others []string
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		f := fields(line)
		if f["id"] == fmt.Sprint(self) || line == "" {
			continue
		}
		others = append(others, fmt.Sprintf("%s (cmd=%s)", f["addr"], f["cmd"]))
	}
	return others, nil
}

// fields splits a CLIENT LIST line, "id=3 addr=127.0.0.1:5000 ...".
func fields(line string) map[string]string {
	m := make(map[string]string)
	for _, kv := range strings.Fields(line) {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

// checkKeys reports the keys on each node that will still be there at
// gone: give it the time the largest TTL will have passed since the last
// write, when every key a lock wrote must have been released or expired.
// A key whose remaining TTL (PTTL) runs out by then is not left, so the
// check need not wait for gone; one without a TTL always is. SCAN skips
// keys whose TTL has run out even when Redis has not evicted them yet.
func checkKeys(nodes []string, gone time.Time) []Violation {
	var vs []Violation
	for i, addr := range nodes {
		keys, err := scanKeys(addr, time.Until(gone))
		switch {
		case err != nil:
			vs = append(vs, Violation{Kind: KeyLeak, Detail: fmt.Sprintf("node %d: SCAN: %v", i, err)})
		case len(keys) > 0:
			vs = append(vs, Violation{Kind: KeyLeak, Detail: fmt.Sprintf("node %d: %d keys left: %s",
				i, len(keys), clip(strings.Join(keys, ", "), 500))})
		}
	}
	return vs
}

// scanKeys returns each key of the node at addr that will not have expired
// within wait, with its remaining TTL; values (tokens) are not read.
// Fence counters (layout.FenceKey) are
// left out: they have no TTL by design and outlive every lock. So are the
// lines of waiters (layout.LineKey) and the primitives' watchers and
// their promises (key:told) that expire within keyserver.LineTTL: a waiter whose LeaveLine a fault lost,
// or that stopped watching a primitive without being woken, keeps its
// place that long after it stopped waiting, as DESIGN.md's rule 9 allows,
// which is longer than the locks' TTL the check waits for.
func scanKeys(addr string, wait time.Duration) ([]string, error) {
	conn, err := dialNode(addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	var keys []string
	cursor := "0"
	for {
		reply, err := redigo.Values(conn.Do("SCAN", cursor, "COUNT", 1000))
		if err != nil {
			return nil, err
		}
		page, err := redigo.Strings(reply[1], nil)
		if err != nil {
			return nil, err
		}
		for _, k := range page {
			pttl, _ := redigo.Int64(conn.Do("PTTL", k))
			if pttl == -2 || pttl >= 0 && time.Duration(pttl)*time.Millisecond <= wait {
				continue // gone, or gone by then
			}
			if k == layout.IncarnationKey || pttl == -1 && strings.HasSuffix(k, ":fence") {
				continue
			}
			if pttl > 0 && pttl <= keyserver.LineTTL.Milliseconds() && (strings.HasSuffix(k, ":line") || strings.HasSuffix(k, ":watchers") || strings.HasSuffix(k, ":told")) {
				continue
			}
			if pttl > 0 && pttl <= keyserver.LineTTL.Milliseconds() && isPromise(conn, k) {
				continue // a waiting set's kept promise, which lapses by itself (see keyserver.SetLocker)
			}
			keys = append(keys, fmt.Sprintf("%q (pttl %d)", k, pttl))
		}
		if cursor, err = redigo.String(reply[0], nil); err != nil || cursor == "0" {
			return keys, err
		}
	}
}

func dialNode(addr string) (redigo.Conn, error) {
	return redigo.Dial("tcp", addr,
		redigo.DialConnectTimeout(time.Second), redigo.DialReadTimeout(time.Second), redigo.DialWriteTimeout(time.Second))
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// isPromise reports whether lock key k holds a promise to a waiter (its
// rank padded with '~'), not a token.
func isPromise(conn redigo.Conn, k string) bool {
	v, err := redigo.String(conn.Do("GET", k))
	return err == nil && strings.HasSuffix(v, "~")
}
