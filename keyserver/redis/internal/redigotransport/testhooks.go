package redigotransport

import "time"

// What keyserver/redis's tests of FromURL's pipeline look at.

// IdleLook is how long a connection must have been idle before a call
// looks for a server's close first.
const IdleLook = idleLook

// Pending returns how many calls the pipeline holds: queued, sent or
// unanswered, abandoned ones included.
func (t *Pipelined) Pending() int64 { return t.pending.Load() }

// SetOverdue shortens how long a silent connection is given past its
// oldest call's deadline. Call it before the first call.
func (t *Pipelined) SetOverdue(d time.Duration) { t.overdue = d }

// Idle reports whether the connection is open and idle: nothing
// unanswered and nobody reading it, so that a call alone is made inline.
func (t *Pipelined) Idle() bool {
	t.mu.Lock()
	cn := t.cn
	t.mu.Unlock()
	if cn == nil || cn.idle == nil {
		return false
	}
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return !cn.dead && !cn.reading && cn.sent.size == 0
}
