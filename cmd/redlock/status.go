package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/goredlock/goredlock/redlock"
)

// statusTimeout bounds how long status waits for each server: connecting,
// telling who it is, and the read.
const statusTimeout = 2 * time.Second

// status is redlock status: what each server holds under NAME, and the
// quorum's verdict, for every kind of hold of the name (the lock, the
// semaphore, the read-write lock and the election NAME), read without
// writing anything. It is redlock.Client.Inspect, printed: one line per
// server and one for the quorum, or one JSON object with --json.
func (t *tool) status(args []string) error {
	cfg, err := parseStatus("status", args, t.getenv)
	if err != nil {
		return err
	}
	client, done, err := t.readClient(cfg.servers, redlock.WithServerTimeout(statusTimeout), redlock.WithLockDelay(cfg.lockDelay))
	if err != nil {
		return err
	}
	defer done()

	ctx, cancel := context.WithTimeout(context.Background(), statusTimeout)
	defer cancel()
	st, err := client.Inspect(ctx, cfg.name)
	var qe *redlock.QuorumError
	switch {
	case errors.Is(err, redlock.ErrInvalidArgument):
		return badf("%v", err) // two servers are one Redis: its answer would count twice
	case err != nil && !errors.As(err, &qe):
		return &exitError{code: exitUnavailable, msg: err.Error()}
	}
	held := anyHeld(st.View)
	if cfg.json {
		if err := t.printJSON(st, t.addrs, client.Quorum(), held, qe == nil); err != nil {
			return err
		}
	} else {
		for i, s := range st.Servers {
			fmt.Fprintln(t.stdout, describeServer(t.addrs[i], s))
		}
		verdict := "quorum: " + describe(st.View)
		if !held && qe != nil {
			verdict = "quorum: too few servers answered to tell"
		}
		fmt.Fprintln(t.stdout, verdict)
	}
	switch {
	case held:
		return &exitError{code: exitHeld}
	case qe != nil:
		// The servers that failed could complete a quorum. Their lines
		// say why: no answer, or an error reply.
		return failf(exitUnavailable, "could not read %q on %d of %d servers (see their errors): too few to tell whether a quorum (%d) holds it",
			cfg.name, len(qe.Failed), qe.Servers, client.Quorum())
	}
	return nil
}

// anyHeld reports whether a quorum holds anything of the name: the lock,
// a permit, a read or write hold, or the leadership. It is what exit
// status 1 means.
func anyHeld(v redlock.View) bool {
	return v.Held || v.Semaphore.InUse > 0 || v.RW.Readers > 0 || v.RW.Writer != "" || v.Election.Leader != ""
}

// describeServer is a server's line: host:port, then what it holds, or
// "error:" and why.
func describeServer(addr string, s redlock.ServerStatus) string {
	if s.Err != nil {
		// The key server's errors start with its name, which the line
		// starts with already.
		msg := strings.TrimPrefix(s.Err.Error(), addr+": ")
		return addr + " error: " + oneLine(msg)
	}
	return addr + " " + describe(s.View)
}

// describe says what v holds: the lock first ("held" and its TTL left by
// a holder's tag, or "free"), then what else the name has, each part only
// when there is something to say.
func describe(v redlock.View) string {
	var b strings.Builder
	if v.Held {
		b.WriteString("held " + left(v.Left) + " by " + v.Holder)
	} else {
		b.WriteString("free")
	}
	if v.Waiters > 0 {
		fmt.Fprintf(&b, ", %d waiting", v.Waiters)
	}
	if v.Fence > 0 {
		fmt.Fprintf(&b, ", fence %d", v.Fence)
	}
	if v.DelayLeft > 0 {
		fmt.Fprintf(&b, ", lock-delay %v", v.DelayLeft)
	}
	if s := v.Semaphore; s.Permits > 0 || s.InUse > 0 || s.Waiters > 0 {
		fmt.Fprintf(&b, "; semaphore %s%d of %s", atLeast(s.Truncated), s.InUse, count(s.Permits, "permit"))
		if s.Waiters > 0 {
			fmt.Fprintf(&b, ", %d waiting", s.Waiters)
		}
	}
	if rw := v.RW; rw.Readers > 0 || rw.Writer != "" || rw.WriterWaiting || rw.Waiters > 0 {
		b.WriteString("; read-write")
		if rw.Writer != "" {
			b.WriteString(" writer " + rw.Writer)
		} else {
			b.WriteString(" " + atLeast(rw.Truncated) + count(rw.Readers, "reader"))
		}
		if rw.WriterWaiting {
			b.WriteString(", a writer waiting")
		}
		if rw.Waiters > 0 {
			fmt.Fprintf(&b, ", %d waiting", rw.Waiters)
		}
	}
	if e := v.Election; e.Leader != "" || e.Term > 0 {
		b.WriteString("; election")
		if e.Leader != "" {
			fmt.Fprintf(&b, " leader %s %s", strconv.Quote(e.Leader), left(e.Left))
		}
		if e.Term > 0 {
			fmt.Fprintf(&b, " term %d", e.Term)
		}
	}
	return b.String()
}

// atLeast says that the count it comes before is the least number held:
// the servers held more than they list (redlock.SemaphoreView.Truncated).
func atLeast(truncated bool) string {
	if truncated {
		return "at least "
	}
	return ""
}

// count writes n things: "1 reader", "2 readers".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}

// left writes a TTL left, or says that the key has none.
func left(d time.Duration) string {
	if d < 0 {
		return "(no expiry)"
	}
	return d.String()
}

// The JSON of status --json (its shape is documented in the manual).
type (
	jsonStatus struct {
		Name    string `json:"name"`
		Held    bool   `json:"held"`    // a quorum holds something of NAME: exit status 1
		Decided bool   `json:"decided"` // false: too few servers answered to tell (exit status 69 unless held)
		Quorum  int    `json:"quorum"`
		NameView
		Servers []jsonServer `json:"servers"`
	}
	jsonServer struct {
		Server string `json:"server"`
		Error  string `json:"error,omitempty"`
		*NameView
	}
	// NameView is exported only so that encoding/json can fill a
	// server's, which it embeds by pointer, in the tests.
	NameView struct {
		Lock      jsonLock      `json:"lock"`
		Semaphore jsonSemaphore `json:"semaphore"`
		RW        jsonRW        `json:"rw"`
		Election  jsonElection  `json:"election"`
	}
	jsonLock struct {
		Held    bool   `json:"held"`
		Holder  string `json:"holder"`
		TTLMs   int64  `json:"ttl_ms"`
		Waiters int    `json:"waiters"`
		Fence   uint64 `json:"fence"`
		DelayMs int64  `json:"delay_ms"`
	}
	jsonSemaphore struct {
		Permits   int  `json:"permits"`
		InUse     int  `json:"in_use"`
		Waiters   int  `json:"waiters"`
		Truncated bool `json:"truncated"` // in_use is the least number in use
	}
	jsonRW struct {
		Readers       int    `json:"readers"`
		Writer        string `json:"writer"`
		WriterWaiting bool   `json:"writer_waiting"`
		Waiters       int    `json:"waiters"`
		Truncated     bool   `json:"truncated"` // readers is the least number held
	}
	jsonElection struct {
		Leader string `json:"leader"`
		TTLMs  int64  `json:"ttl_ms"`
		Term   uint64 `json:"term"`
	}
)

func toJSON(v redlock.View) NameView {
	return NameView{
		Lock:      jsonLock{Held: v.Held, Holder: v.Holder, TTLMs: ms(v.Left), Waiters: v.Waiters, Fence: v.Fence, DelayMs: ms(v.DelayLeft)},
		Semaphore: jsonSemaphore{Permits: v.Semaphore.Permits, InUse: v.Semaphore.InUse, Waiters: v.Semaphore.Waiters, Truncated: v.Semaphore.Truncated},
		RW:        jsonRW{Readers: v.RW.Readers, Writer: v.RW.Writer, WriterWaiting: v.RW.WriterWaiting, Waiters: v.RW.Waiters, Truncated: v.RW.Truncated},
		Election:  jsonElection{Leader: v.Election.Leader, TTLMs: ms(v.Election.Left), Term: v.Election.Term},
	}
}

// ms is d in milliseconds; -1 for a key without a TTL.
func ms(d time.Duration) int64 {
	if d < 0 {
		return -1
	}
	return d.Milliseconds()
}

// printJSON writes st as one JSON object and a newline.
func (t *tool) printJSON(st redlock.Status, addrs []string, quorum int, held, decided bool) error {
	out := jsonStatus{Name: st.Name, Held: held, Decided: decided || held, Quorum: quorum, NameView: toJSON(st.View)}
	for i, s := range st.Servers {
		js := jsonServer{Server: addrs[i]}
		if s.Err != nil {
			js.Error = oneLine(strings.TrimPrefix(s.Err.Error(), addrs[i]+": "))
		} else {
			v := toJSON(s.View)
			js.NameView = &v
		}
		out.Servers = append(out.Servers, js)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(t.stdout, "%s\n", b)
	return err
}
