package main

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
)

// lineHandler prints the redlock client's warnings (an even number of
// servers, a server failing, an extension failing, the lock lost) as the
// tool's other messages are printed: one line on stderr each, without
// timestamps, which whatever collects stderr adds. The client never logs
// a token. While the lock is being acquired it prints nothing: the error
// that ends a failed acquisition names every server's failure already.
type lineHandler struct {
	t     *tool
	attrs []slog.Attr
}

func (t *tool) logger() *slog.Logger { return slog.New(&lineHandler{t: t}) }

func (h *lineHandler) Enabled(_ context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && !h.t.quiet.Load()
}

func (h *lineHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	write := func(a slog.Attr) bool {
		v := a.Value.Resolve().String()
		if v == "" || strings.ContainsAny(v, " \t\"=") {
			v = strconv.Quote(v)
		}
		b.WriteString(" " + a.Key + "=" + v)
		return true
	}
	for _, a := range h.attrs {
		write(a)
	}
	r.Attrs(write)
	msg := b.String()
	if !strings.HasPrefix(msg, "redlock: ") {
		msg = "redlock: " + msg
	}
	h.t.say(msg)
	return nil
}

func (h *lineHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &lineHandler{t: h.t, attrs: append(append([]slog.Attr(nil), h.attrs...), attrs...)}
}

// WithGroup is not needed by the client, which logs flat attributes; the
// group's name is dropped.
func (h *lineHandler) WithGroup(string) slog.Handler { return h }
