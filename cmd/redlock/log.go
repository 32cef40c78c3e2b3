package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// lineHandler prints the redlock client's warnings (an even number of
// servers, a server failing, an extension failing, the lock lost) as the
// tool's other messages are printed: one line on stderr each, without
// timestamps, which whatever collects stderr adds, and in words rather
// than key=value pairs. The client never logs a token. While the lock is
// being acquired it prints nothing: the error that ends a failed
// acquisition names every server's failure already.
type lineHandler struct {
	t     *tool
	attrs []slog.Attr
}

func (t *tool) logger() *slog.Logger { return slog.New(&lineHandler{t: t}) }

func (h *lineHandler) Enabled(_ context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && !h.t.quiet.Load()
}

// Handle writes the message, then its attributes in parentheses, then the
// error, if any, after a colon:
//
//	redlock: lock lost: not extended in time (lock "job", 98ms before it expires)
//	redlock: key server failing (extend, lock "job", server 127.0.0.1:7602): ...
func (h *lineHandler) Handle(_ context.Context, r slog.Record) error {
	var (
		parts, errs []string
		acquire     bool
		identify    bool
		server      = -1
	)
	add := func(a slog.Attr) bool {
		v := a.Value.Resolve()
		switch {
		case a.Key == "op":
			acquire, identify = v.String() == "acquire", v.String() == "identify"
		case a.Key == "server" && v.Kind() == slog.KindInt64:
			server = int(v.Int64())
		}
		if a.Key == "error" {
			errs = append(errs, v.String())
		} else {
			parts = append(parts, h.phrase(a.Key, v))
		}
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	if acquire || identify && h.t.first != nil && h.t.first.named(server) {
		// A server failing to grant the lock, or to say who it is before
		// its first vote: the run reports the first attempt's failures
		// itself (firstAttempt), or in its error.
		return nil
	}
	msg := r.Message
	if !strings.HasPrefix(msg, "redlock: ") {
		msg = "redlock: " + msg
	}
	if len(parts) > 0 {
		msg += " (" + strings.Join(parts, ", ") + ")"
	}
	if len(errs) > 0 {
		msg += ": " + strings.Join(errs, "; ")
	}
	h.t.say(msg)
	return nil
}

// phrase says one attribute of a client record in words: durations with
// their units, the lock's name quoted, a server by its host:port.
func (h *lineHandler) phrase(key string, v slog.Value) string {
	switch key {
	case "lock":
		return fmt.Sprintf("lock %q", v.String())
	case "op":
		return v.String()
	case "server":
		if v.Kind() == slog.KindInt64 {
			return "server " + h.t.serverName(int(v.Int64()))
		}
	case "until":
		if v.Kind() == slog.KindDuration {
			return roundDuration(v.Duration()).String() + " before it expires"
		}
	}
	s := v.String()
	if v.Kind() == slog.KindDuration {
		s = roundDuration(v.Duration()).String()
	}
	if s == "" || strings.ContainsAny(s, "\"\n\r") {
		s = fmt.Sprintf("%q", s)
	}
	return strings.ReplaceAll(key, "_", " ") + " " + s
}

// roundDuration rounds d to a millisecond, which is all a reader of the
// tool's messages can use, once it is over one.
func roundDuration(d time.Duration) time.Duration {
	if d > time.Millisecond || d < -time.Millisecond {
		return d.Round(time.Millisecond)
	}
	return d
}

func (h *lineHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &lineHandler{t: h.t, attrs: append(append([]slog.Attr(nil), h.attrs...), attrs...)}
}

// WithGroup is not needed by the client, which logs flat attributes; the
// group's name is dropped.
func (h *lineHandler) WithGroup(string) slog.Handler { return h }
