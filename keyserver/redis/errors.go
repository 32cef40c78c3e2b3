package redis

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"

	redigo "github.com/gomodule/redigo/redis"

	"github.com/goredlock/goredlock/internal/redisscript"
	"github.com/goredlock/goredlock/keyserver"
)

// ErrClosed is returned by calls on a Server whose Close has been called
// and whose connections it owned.
var ErrClosed = errors.New("redis: server closed")

// ErrOverloaded is returned, at once, by a call to a pipelined Server that
// already holds WithMaxPending calls waiting for their replies: the server
// is not keeping up (or not answering), and queueing more would only grow
// memory and delay.
var ErrOverloaded = errors.New("redis: too many calls waiting for this server")

// ErrConnectionLost is returned by the calls a pipelined connection had sent
// when it broke, or was closed for not answering: each of them may or may
// not have run on the server. The next call opens a new connection.
var ErrConnectionLost = errors.New("redis: connection lost before the reply (the call may have run)")

// permanent reports whether err is a failure that retrying the same call
// cannot fix: a key holding another type of value (WRONGTYPE), failed
// authentication or a missing permission, a server that refuses the
// scripts (NOSCRIPT after EVAL, an unknown or disabled command), or a
// certificate that is not trusted. Timeouts, lost connections, a server
// that is loading or busy, and ErrOverloaded are not.
func permanent(err error) bool {
	var redisErr redigo.Error
	if errors.As(err, &redisErr) {
		return redisscript.PermanentReply(string(redisErr))
	}
	var (
		verify    *tls.CertificateVerificationError
		authority x509.UnknownAuthorityError
		host      x509.HostnameError
		invalid   x509.CertificateInvalidError
	)
	return errors.As(err, &verify) || errors.As(err, &authority) || errors.As(err, &host) || errors.As(err, &invalid)
}

// describe wraps a failed call's error with the server, operation and key,
// says authentication failures in plain words, and marks the failures that
// retrying cannot fix with keyserver.ErrPermanent, so that the redlock
// client stops retrying them.
func describe(server, op, key string, err error) error {
	err = describeAuth(err)
	if permanent(err) {
		err = keyserver.Permanent(err)
	}
	return fmt.Errorf("%s: %s %q: %w", server, op, key, err)
}

// describeAuth makes authentication failures say so in plain words:
// Redis reports them as WRONGPASS (wrong password), NOAUTH (none given) or,
// before ACLs, "ERR AUTH ... called without any password configured".
func describeAuth(err error) error {
	msg := err.Error()
	for _, code := range []string{"WRONGPASS", "NOAUTH", "ERR AUTH", "invalid password"} {
		if strings.Contains(msg, code) {
			return fmt.Errorf("authentication failed (wrong or missing password?): %w", err)
		}
	}
	return err
}

// connecting marks a failure to open a connection, so that it reads
// differently from a call that failed on an open one.
func connecting(err error) error { return fmt.Errorf("connecting: %w", err) }
