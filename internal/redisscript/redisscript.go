// Package redisscript holds the Lua scripts every Redis key server runs, so
// that servers built on different Redis clients (redigo, go-redis, rueidis)
// behave identically and share one script cache entry per script: EVALSHA
// names a script by the SHA-1 of its exact text, so a copy that differed by a
// single space would be loaded and cached separately.
//
// Each script's keys share one hash slot (AcquireFenced's second key is
// keyserver.FenceKey of its first), so it runs on the node that owns the key
// in a Redis Cluster too. Changing a script's text changes its digest: servers
// load the new text on first use (EVALSHA fails with NOSCRIPT, EVAL loads it).
package redisscript

import (
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

// Set stores KEYS[1]=ARGV[1] for ARGV[2] milliseconds if the key is absent,
// or resets the TTL if it already holds ARGV[1]; it returns 1 when the key
// holds ARGV[1] afterwards and 0 when another value holds it.
//
// It is both Acquire and Extend: for Redis "store if absent" and "re-create
// if absent (a restarted server)" are the same rule. SET NX comes first, as
// most calls find the key absent: one command inside the script instead of
// two. On a key of another type SET NX does nothing and GET fails, which
// aborts the script before it writes anything.
const Set = take + `return 0
`

// take is the head of Set and AcquireOrHolder: store the token if the key
// is absent, renew it if the key holds it, returning 1 either way; what
// follows runs only when another value, the local v, holds the key.
const take = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
	return 1
end
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
	redis.call('PEXPIRE', KEYS[1], ARGV[2])
	return 1
end
`

// Del deletes KEYS[1] if it holds ARGV[1], and returns the number of keys
// deleted: 1, or 0 when the key is absent or holds another value. Like Set,
// it fails without writing on a key of another type.
//
// A delete is published, so that waiters wake at once instead of polling:
// PUBLISH on ReleaseChannel(KEYS[1]), computed here by the same rule, with
// the key as the message. A user whom an ACL denies PUBLISH still releases
// (pcall keeps the error from failing the script after the DEL); its
// waiters then wake by the holder's TTL, as for a key that expires.
const Del = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
	return 0
end
redis.call('DEL', KEYS[1])
local c = KEYS[1]
local open = string.find(c, '{', 1, true)
local close = open and string.find(c, '}', open + 1, true)
if not close or close == open + 1 then
	c = '{' .. c .. '}'
end
pcall(redis.call, 'PUBLISH', c .. ':released', KEYS[1])
return 1
`

// AcquireOrHolder is Set that, when another value holds KEYS[1], describes
// the holder (see Holder): it returns 1 when KEYS[1] holds ARGV[1]
// afterwards, and otherwise left·8 + order·2, where left is the holder's
// PTTL in milliseconds (at least 1, as a key under a millisecond from its
// expiry still exists; 0 when the key has no TTL) and order compares the
// holder's rank with the caller's by keyserver.Compare's rule (0 unranked,
// 1 the holder's first, 2 the caller's). Odd means granted, as for
// AcquireFenced.
const AcquireOrHolder = take + `local function rank(t)
	if #t == 49 and string.byte(t, 17) == 46 then
		return string.sub(t, 1, 25)
	end
end
local h, c = rank(v), rank(ARGV[1])
local order = 0
if h and c and h < c then
	order = 1
elseif h and c and c < h then
	order = 2
end
local left = redis.call('PTTL', KEYS[1])
if left < 0 then
	left = 0
else
	left = math.max(left, 1)
end
return left * 8 + order * 2
`

// Holder decodes AcquireOrHolder's reply: whether the caller holds the
// key, and otherwise its holder.
func Holder(n int64) (bool, keyserver.Holder) {
	if n&1 == 1 {
		return true, keyserver.Holder{}
	}
	return false, keyserver.Holder{Left: time.Duration(n>>3) * time.Millisecond, Rank: keyserver.Order(n >> 1 & 3)}
}

// AcquireFenced is Set on KEYS[1] with the token ARGV[1] and the TTL ARGV[2]
// milliseconds, which also reads the fence counter KEYS[2] (absent is 0),
// atomically with the vote: it returns counter·2 + 1 when KEYS[1] holds
// ARGV[1] afterwards, counter·2 when another value holds it. Counters stay
// far below 2^52, where Lua's numbers are exact.
const AcquireFenced = `
local f = tonumber(redis.call('GET', KEYS[2]) or '0')
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
	return f * 2 + 1
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
	redis.call('PEXPIRE', KEYS[1], ARGV[2])
	return f * 2 + 1
end
return f * 2
`

// RaiseFence sets the fence counter KEYS[1] to ARGV[1] if it holds less
// (absent is 0), and returns the counter as it was. The counter has no TTL.
const RaiseFence = `
local prev = tonumber(redis.call('GET', KEYS[1]) or '0')
if prev < tonumber(ARGV[1]) then
	redis.call('SET', KEYS[1], ARGV[1])
end
return prev
`
