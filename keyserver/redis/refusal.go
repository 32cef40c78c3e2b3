package redis

import (
	"errors"
	"regexp"
	"strings"

	"github.com/goredlock/goredlock/internal/layout"
	"github.com/goredlock/goredlock/keyserver"
)

// RefusedError is the error of a call that a server refused because it
// does not allow something goredlock needs there: a command an ACL denies,
// or one the server does not have (renamed, disabled, or not in this
// engine), or a key or channel an ACL does not cover. It names what is
// missing and the ACL rule that grants it, and matches
// keyserver.ErrPermanent: asking again gets the same answer.
type RefusedError struct {
	// Commands are the refused commands as Redis names them ("EVAL",
	// "ZADD", "config|get"); none when a key or channel was refused, or
	// when the server did not say which command a script was refused.
	Commands []string
	// Rule is what allows them: an ACL rule ("+@scripting", "+zadd",
	// "~pattern", "&goredlock:*"), or what to do on the server.
	Rule string
	// Err is the server's reply, when there is one.
	Err error

	why string // what needs it, for the message
}

// Error says what was refused, what needs it and what allows it.
func (e *RefusedError) Error() string {
	var b strings.Builder
	switch {
	case len(e.Commands) > 0:
		b.WriteString(strings.Join(e.Commands, ", ") + " refused")
	default:
		b.WriteString("refused")
	}
	if e.Err != nil {
		reply, _, _ := strings.Cut(e.Err.Error(), ", with args beginning with")
		b.WriteString(" (" + reply + ")")
	}
	if e.why != "" {
		b.WriteString(": " + e.why)
	}
	if e.Rule != "" {
		b.WriteString("; to allow it: " + e.Rule)
	}
	return b.String()
}

// Unwrap returns the server's reply and keyserver.ErrPermanent, which
// a refusal is.
func (e *RefusedError) Unwrap() []error {
	if e.Err == nil {
		return []error{keyserver.ErrPermanent}
	}
	return []error{e.Err, keyserver.ErrPermanent}
}

var (
	// Redis 6 and 7.0 say "this user has", 7.2 and later "User NAME has".
	noPermCommand = regexp.MustCompile(`no permissions to run the '([^']+)' command`)
	unknownCmd    = regexp.MustCompile(`unknown command '([^']*)'`)
	unknownSubcmd = regexp.MustCompile(`unknown subcommand '([^']*)'`)
)

// refusal returns err as a *RefusedError when it is a server's refusal of
// a command, a key or a channel (an ACL's NOPERM, an unknown command, a
// script's command refused), naming what grants it; any other err as it
// is. key is the call's key, if any.
func (s *Server) refusal(key string, err error) error {
	var already *RefusedError
	if errors.As(err, &already) {
		return err
	}
	msg, ok := s.t.ReplyText(err)
	if !ok {
		return err
	}
	r := refusalOf(msg, key)
	if r == nil {
		return err
	}
	r.Err = err
	return r
}

// refusalOf reads a refusal in an error reply's text: nil when msg is none.
func refusalOf(msg, key string) *RefusedError {
	keyRule := `an ACL key pattern (~) that covers the lock's keys`
	if key != "" {
		keyRule = `an ACL key pattern (~) that covers "` + key + `" and the keys beside it (` + besideKeys(key) + `)`
	}
	// Redis 7.0 says NOPERM at the top level and "The user executing the
	// script can't ..." in a script; 7.2 and later, and Valkey, "ACL
	// failure in script: ..." there.
	acl := strings.HasPrefix(msg, "NOPERM") || strings.Contains(msg, "ACL failure") ||
		strings.Contains(msg, "The user executing the script")
	if acl {
		m := noPermCommand.FindStringSubmatch(msg)
		switch {
		case m != nil:
			return &RefusedError{Commands: []string{strings.ToUpper(m[1])}, Rule: ruleFor(m[1])}
		case strings.Contains(msg, "access") && strings.Contains(msg, "key"):
			return &RefusedError{Rule: keyRule + `, and ~` + layout.IncarnationKey}
		case strings.Contains(msg, "access") && strings.Contains(msg, "channel"):
			return &RefusedError{Rule: "the ACL rule &goredlock:* (the channels of the wake-ups)"}
		default: // Redis 7.0 does not say which command of a script
			return &RefusedError{Rule: "the commands of the minimal ACL in docs/redis.md (or +@all -@dangerous)",
				why: "a command the script calls"}
		}
	}
	if m := unknownCmd.FindStringSubmatch(msg); m != nil {
		return &RefusedError{Commands: []string{strings.ToUpper(m[1])}, Rule: "enable the command on the server (it is renamed, disabled or absent in this engine)"}
	}
	if m := unknownSubcmd.FindStringSubmatch(msg); m != nil && strings.Contains(msg, "SCRIPT") {
		return &RefusedError{Commands: []string{"SCRIPT " + m[1]}, Rule: "enable the command on the server (it is disabled or absent in this engine)"}
	}
	return nil
}

// ruleFor is the ACL rule that allows cmd: its category for the scripting
// commands, which come together, the command itself otherwise.
func ruleFor(cmd string) string {
	switch c := strings.ToLower(cmd); {
	case c == "eval" || c == "evalsha" || strings.HasPrefix(c, "script"):
		return "the ACL rule +@scripting (or +eval +evalsha)"
	default:
		return "the ACL rule +" + c
	}
}

// besideKeys says which keys belong to key (layout's beside): "{key}:*",
// or "key:*" for a key with a hash tag.
func besideKeys(key string) string {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			return key + ":*"
		}
	}
	return "{" + key + "}:*"
}
