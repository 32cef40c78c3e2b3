package redis

import "time"

// SetOverdueLimit shortens how long a silent pipelined connection, or a
// subscriber connection, is given past its oldest request's deadline. Call
// it before the Server's first call.
func SetOverdueLimit(s *Server, d time.Duration) {
	if p, ok := s.t.(pipelined); ok {
		p.overdue = d
	}
	s.sub.overdue = d
}

// Dials returns how many connections a pipelined Server has opened.
func Dials(s *Server) int64 { return s.t.(pipelined).dials.Load() }

// Pending returns how many calls a pipelined Server holds: queued, sent or
// unanswered, abandoned ones included.
func Pending(s *Server) int64 { return s.t.(pipelined).pending.Load() }

// IdleLook is how long a connection must have been idle before a call
// looks for a server's close first.
const IdleLook = idleLook

// Idle reports whether a pipelined Server's connection is open and idle:
// nothing unanswered and nobody reading it, so that a call alone is made
// inline.
func Idle(s *Server) bool {
	p := s.t.(pipelined).pipeline
	p.mu.Lock()
	cn := p.cn
	p.mu.Unlock()
	if cn == nil || cn.idle == nil {
		return false
	}
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return !cn.dead && !cn.reading && cn.sent.size == 0
}
