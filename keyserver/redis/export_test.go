package redis

import "time"

// SetOverdueLimit shortens how long a silent pipelined connection is given
// past its oldest call's deadline. Call it before the Server's first call.
func SetOverdueLimit(s *Server, d time.Duration) { s.pipe.overdue = d }

// Dials returns how many connections a pipelined Server has opened.
func Dials(s *Server) int64 { return s.pipe.dials.Load() }

// Pending returns how many calls a pipelined Server holds: queued, sent or
// unanswered, abandoned ones included.
func Pending(s *Server) int64 { return s.pipe.pending.Load() }
