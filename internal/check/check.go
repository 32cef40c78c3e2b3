// Package check holds the argument checks of a set's and a hold's calls
// that this module's key servers (memory, static, Redis) share, so that
// they refuse the same input with the same error, and the error of a
// semaphore asked with a permit count other than the stored one. They are the checks of
// keyserver.CheckKey, CheckToken and CheckTTL, which are public, applied
// to every key of a set and to a HoldSpec's documented constraints; a
// third-party server applies those constraints as it likes (keyservertest
// checks that it does).
//
// Each check comes in two: one for the calls that store something for a
// TTL, which must be at least layout.MinTTL, and one for those that
// store nothing. (One function with a TTL of 0 for "no TTL" would pass an
// acquire whose caller gave a TTL of 0.)
package check

import (
	"fmt"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

// Keys validates a call about the set keys that stores nothing
// (ReleaseAll, LeaveLines): at least one key, none empty, and a token.
func Keys(keys []string, token string) error {
	if len(keys) == 0 {
		return keyserver.CheckKey("")
	}
	for _, k := range keys {
		if err := keyserver.CheckToken(k, token); err != nil {
			return err
		}
	}
	return nil
}

// KeysTTL validates a call that stores token under the set keys for ttl
// (AcquireAll, ExtendAll, AcquireAllInLine): Keys, and a TTL of at least
// layout.MinTTL.
func KeysTTL(keys []string, token string, ttl time.Duration) error {
	if len(keys) == 0 {
		return keyserver.CheckKey("")
	}
	for _, k := range keys {
		if err := keyserver.CheckTTL(k, token, ttl); err != nil {
			return err
		}
	}
	return nil
}

// Hold validates h for the calls that store nothing (ReleaseHold,
// WatchHolds): a known Kind, a key, a token, and a PermitHold's 0 ≤ Slot <
// Permits. A LeaderHold's watch, which needs no token, checks its key
// (keyserver.CheckKey) instead.
func Hold(h keyserver.HoldSpec) error {
	if err := kind(h); err != nil {
		return err
	}
	if err := keyserver.CheckToken(h.Key, h.Token); err != nil {
		return err
	}
	return slot(h)
}

// HoldTTL validates h for the calls that store it for ttl (AcquireHold,
// ExtendHold): Hold, a TTL of at least layout.MinTTL, and a
// LeaderHold's Value.
func HoldTTL(h keyserver.HoldSpec, ttl time.Duration) error {
	if err := kind(h); err != nil {
		return err
	}
	if err := keyserver.CheckTTL(h.Key, h.Token, ttl); err != nil {
		return err
	}
	if h.Kind == keyserver.LeaderHold && h.Value == "" {
		return fmt.Errorf("%w: empty value for election %q", keyserver.ErrInvalidArgument, h.Key)
	}
	return slot(h)
}

// PermitsDiffer is the error of a PermitHold's AcquireHold asking for
// permits when the server stores another count for the semaphore while
// some of its slots are held (see keyserver.ErrPermitsDiffer): it names
// both counts.
func PermitsDiffer(key string, permits, stored int) error {
	return Permanent(fmt.Errorf("%w: semaphore %q asked with %d permits, stored with %d while held", keyserver.ErrPermitsDiffer, key, permits, stored))
}

// kind refuses a hold of no known kind.
func kind(h keyserver.HoldSpec) error {
	if h.Kind < keyserver.PermitHold || h.Kind > keyserver.LeaderHold {
		return fmt.Errorf("%w: unknown hold kind %d for key %q", keyserver.ErrInvalidArgument, h.Kind, h.Key)
	}
	return nil
}

// slot refuses a PermitHold's slot outside its permits.
func slot(h keyserver.HoldSpec) error {
	if h.Kind == keyserver.PermitHold && (h.Permits < 1 || h.Slot < 0 || h.Slot >= h.Permits) {
		return fmt.Errorf("%w: slot %d of %d permits for semaphore %q", keyserver.ErrInvalidArgument, h.Slot, h.Permits, h.Key)
	}
	return nil
}

// Permanent marks err as a failure that trying again cannot fix
// (keyserver.ErrPermanent) and keeps its message: the result matches both
// err and ErrPermanent under errors.Is. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanent{err}
}

type permanent struct{ error }

func (p permanent) Unwrap() error        { return p.error }
func (p permanent) Is(target error) bool { return target == keyserver.ErrPermanent }
