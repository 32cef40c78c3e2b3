package redis

import (
	"time"

	"github.com/goredlock/goredlock/keyserver/redis/internal/redigotransport"
)

// pipelineOf returns the pipelined transport of a Server FromURL made.
func pipelineOf(s *Server) *redigotransport.Pipelined { return s.t.(pipelinedTransport).Pipelined }

// SetOverdueLimit shortens how long a silent pipelined connection, or a
// subscriber connection, is given past its oldest request's deadline. Call
// it before the Server's first call.
func SetOverdueLimit(s *Server, d time.Duration) {
	if t, ok := s.t.(pipelinedTransport); ok {
		t.SetOverdue(d)
	}
	s.sub.overdue = d
}

// Dials returns how many connections a pipelined Server has opened.
func Dials(s *Server) int64 {
	n, _ := pipelineOf(s).Connections()
	return n
}

// Pending returns how many calls a pipelined Server holds: queued, sent or
// unanswered, abandoned ones included.
func Pending(s *Server) int64 { return pipelineOf(s).Pending() }

// IdleLook is how long a connection must have been idle before a call
// looks for a server's close first.
const IdleLook = redigotransport.IdleLook

// Idle reports whether a pipelined Server's connection is open and idle:
// nothing unanswered and nobody reading it, so that a call alone is made
// inline.
func Idle(s *Server) bool { return pipelineOf(s).Idle() }

// ScriptCheck is the scripting check's source, and the commands the
// scripts call with the arguments it checks them with.
func ScriptCheck() (src string, commands []string, args map[string][]string) {
	return checkSrc, scriptCommands, checkArgs
}

// SetRecheckRefused sets how long a Server keeps a scripting refusal
// before it asks again, until the returned function puts it back.
func SetRecheckRefused(d time.Duration) (restore func()) {
	old := recheckRefused
	recheckRefused = d
	return func() { recheckRefused = old }
}
