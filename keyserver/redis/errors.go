package redis

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"

	"github.com/goredlock/goredlock/internal/check"
	"github.com/goredlock/goredlock/keyserver/redis/internal/redigotransport"
)

// ErrOverloaded is returned at once by a call to a pipelined Server that
// already holds WithMaxPending calls waiting for replies: the server is not
// keeping up, and queueing more would only grow memory and delay.
var ErrOverloaded = redigotransport.ErrOverloaded

// ErrConnectionLost is returned by the calls a connection had sent when it
// broke, or was closed for not answering: each of them may or may not have
// run on the server. It also fails a WatchTurn whose subscriber connection
// broke before Redis confirmed the subscription.
var ErrConnectionLost = redigotransport.ErrConnectionLost

// permanentCodes are the Redis error replies the same call will get again,
// whatever the timing; LOADING, BUSY, MASTERDOWN, TRYAGAIN, OOM or "ERR max
// number of clients reached" can clear up and are left out.
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

// permanent reports whether retrying the same call cannot fix err: a Redis
// error reply among permanentCodes, or an untrusted server certificate; not
// timeouts, lost connections, a loading or busy server, or ErrOverloaded.
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

// fail wraps err with the server, operation and key, so one log line says
// which server failed on what, and marks with keyserver.ErrPermanent what
// retrying cannot fix. No password or token is quoted, here or by a transport.
func (s *Server) fail(op, key string, err error) error {
	if containsAny(err.Error(), authCodes) {
		err = fmt.Errorf("authentication failed (wrong or missing password?): %w", err)
	}
	if msg, ok := s.t.ReplyText(err); ok && strings.HasPrefix(msg, "READONLY") {
		err = check.Permanent(fmt.Errorf("%w: %w", errReplica, err))
	}
	err = s.refusal(key, err) // names what is missing and what grants it
	if s.permanent(err) {
		err = check.Permanent(err)
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
