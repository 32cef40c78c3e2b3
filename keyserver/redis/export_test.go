package redis

import "time"

// SetOverdueLimit shortens how long a silent pipelined connection, or the
// subscriber connection, is given past its oldest request's deadline. Call
// it before the Server's first call.
func SetOverdueLimit(s *Server, d time.Duration) {
	if s.pipe != nil {
		s.pipe.overdue = d
	}
	s.sub.overdue = d
}

// SetPingAfter sets how long the subscriber connection may stay silent
// before a Watch pings it. Call it before the Server's first Watch.
func SetPingAfter(s *Server, d time.Duration) { s.sub.pingAfter = d }

// Dials returns how many connections a pipelined Server has opened.
func Dials(s *Server) int64 { return s.pipe.dials.Load() }

// SubscriberDials returns how many subscriber connections a Server has
// opened.
func SubscriberDials(s *Server) int64 { return s.sub.dials.Load() }

// Pending returns how many calls a pipelined Server holds: queued, sent or
// unanswered, abandoned ones included.
func Pending(s *Server) int64 { return s.pipe.pending.Load() }
