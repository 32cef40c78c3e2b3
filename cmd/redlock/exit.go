package main

import (
	"fmt"
	"strings"
)

// Exit statuses of the tool's own outcomes, from sysexits.h where one
// fits, so that scripts can tell "someone else has it" from "Redis is
// down" from "you typed it wrong". Everything else is COMMAND's status.
const (
	exitOK          = 0   // COMMAND succeeded, a --skip, or status found no quorum holding the lock
	exitHeld        = 1   // status: a quorum holds the lock
	exitNoLeader    = 1   // leader: no holder leads on a quorum
	exitUsage       = 64  // EX_USAGE: bad flags or arguments, no servers, a bad URL
	exitUnavailable = 69  // EX_UNAVAILABLE: too few servers answered
	exitLost        = 70  // EX_SOFTWARE: the lock was lost while COMMAND ran
	exitTempFail    = 75  // EX_TEMPFAIL: held elsewhere, after --wait
	exitCannotExec  = 126 // COMMAND exists but cannot be executed
	exitNotFound    = 127 // COMMAND was not found
	exitSignal      = 128 // plus N: signal N ended COMMAND, or redlock before COMMAND started
)

// exitError ends the tool with code after printing msg, one line, on
// stderr. An empty msg prints nothing.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// failf returns an exitError with a message in the tool's voice. The
// redlock package's errors already start with "redlock: ".
func failf(code int, format string, args ...any) *exitError {
	msg := fmt.Sprintf(format, args...)
	if !strings.HasPrefix(msg, "redlock: ") {
		msg = "redlock: " + msg
	}
	return &exitError{code: code, msg: msg}
}

// usagef is a command line that does not parse: the problem, then the
// one line of help for the subcommand, all on one line.
func usagef(sub, format string, args ...any) *exitError {
	more := "redlock -h"
	if sub != "" {
		more = "redlock " + sub + " -h"
	}
	return failf(exitUsage, "%s (usage: %s; %s for more)", fmt.Sprintf(format, args...), synopsis[sub], more)
}

// badf is a usage error in a value that parsed: a bad URL, a flag this
// build cannot honour. The problem alone is the help.
func badf(format string, args ...any) *exitError {
	return failf(exitUsage, format, args...)
}

// oneLine keeps a message on one line whatever an error it quotes holds,
// so that every message of the tool is one line of stderr.
func oneLine(s string) string {
	s = strings.TrimRight(s, "\n")
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
}
