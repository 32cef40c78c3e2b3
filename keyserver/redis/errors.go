package redis

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"

	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/redis/internal/redigotransport"
)

// ErrOverloaded is returned, at once, by a call to a pipelined Server that
// already holds WithMaxPending calls waiting for their replies: the server
// is not keeping up (or not answering), and queueing more would only grow
// memory and delay.
var ErrOverloaded = redigotransport.ErrOverloaded

// ErrConnectionLost is returned by the calls a connection had sent when it
// broke, or was closed for not answering: each of them may or may not have
// run on the server. It also fails a WatchTurn whose subscriber connection
// broke before Redis confirmed the subscription.
var ErrConnectionLost = redigotransport.ErrConnectionLost

// permanentCodes are the Redis error replies that the same call will get
// again, whatever the timing. Replies such as LOADING, BUSY, MASTERDOWN,
// TRYAGAIN, OOM or "ERR max number of clients reached" can clear up and
// are left out.
var permanentCodes = []string{
	"WRONGTYPE", // also inside the message of a script error
	"NOAUTH", "WRONGPASS", "ERR AUTH", "invalid password", "ERR Client sent AUTH",
	"NOPERM",
	"NOSCRIPT", // only ever returned to the caller after the EVAL fallback
	"ERR unknown command",
	"CROSSSLOT", // a key whose fence key hashes elsewhere in a Cluster
}

// authCodes are the replies of a failed authentication: WRONGPASS (wrong
// password), NOAUTH (none given) or, before ACLs, "ERR AUTH ... called
// without any password configured".
var authCodes = []string{"WRONGPASS", "NOAUTH", "ERR AUTH", "invalid password"}

// permanent reports whether err is a failure that retrying the same call
// cannot fix: a Redis error reply among permanentCodes, or a server
// certificate that is not trusted. Timeouts, lost connections, a server
// that is loading or busy, and ErrOverloaded are not.
func (s *Server) permanent(err error) bool {
	if msg, ok := s.t.ReplyText(err); ok {
		return containsAny(msg, permanentCodes)
	}
	var (
		verify    *tls.CertificateVerificationError
		authority x509.UnknownAuthorityError
		host      x509.HostnameError
		invalid   x509.CertificateInvalidError
	)
	return errors.As(err, &verify) || errors.As(err, &authority) || errors.As(err, &host) || errors.As(err, &invalid)
}

// fail wraps a failed call's error with the server, operation and key, so
// that one line of a log says which of N servers failed and on what; says
// authentication failures in plain words; and marks the failures that
// retrying cannot fix with keyserver.ErrPermanent, so that the redlock
// client stops retrying them. Neither the error of a transport nor this
// wrapping quotes a password or a token.
func (s *Server) fail(op, key string, err error) error {
	if containsAny(err.Error(), authCodes) {
		err = fmt.Errorf("authentication failed (wrong or missing password?): %w", err)
	}
	if s.permanent(err) {
		err = keyserver.Permanent(err)
	}
	if key == "" { // a call about the server, not a key
		return fmt.Errorf("%s: %s: %w", s.name, op, err)
	}
	return fmt.Errorf("%s: %s %q: %w", s.name, op, key, err)
}

func containsAny(msg string, codes []string) bool {
	for _, code := range codes {
		if strings.Contains(msg, code) {
			return true
		}
	}
	return false
}
