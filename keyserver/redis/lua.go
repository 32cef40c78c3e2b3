package redis

import (
	"fmt"

	"github.com/goredlock/goredlock/keyserver"
)

// The Lua scripts of the Server. Each operation is one script, so that the
// owner check and the write are atomic, and each is written to spend as few
// commands inside Redis as it can: Redis counts each redis.call as a
// command, and under contention they are the cost of a grant.
//
// Conventions: KEYS[1] is the lock key and KEYS[2], when present, the key
// beside it (keyserver.LineKey or keyserver.FenceKey, in its Cluster slot).
// ARGV[1] is the caller's token, ARGV[2] the TTL in milliseconds, and
// ARGV[3] the caller's promise (keyserver.PromiseOf its token, computed in
// Go, or the token itself when it carries no rank): a key holding either is
// the caller's own. SET ... NX GET (Redis 7.0) stores the token if the key
// is absent and returns what the key held: one command for "take it if
// free, or tell me who holds it". On a key of another type it fails with
// WRONGTYPE before anything is written.

// own stores the token when the key is free or already the caller's, and
// returns 1; what follows it runs only when another value, the local v,
// holds the key. The caller's own value may carry the waiters' mark (see
// marked), which renewing it keeps; a promise it claims gets the mark, as
// a promise is made only when waiters were in line.
const own = `
local v = redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2], 'GET')
if not v then
	return 1
end
if v == ARGV[1] or v == ARGV[3] or v == ARGV[1] .. '+' then
	if v ~= ARGV[1] then
		v = ARGV[1] .. '+'
	end
	redis.call('SET', KEYS[1], v, 'PX', ARGV[2])
	return 1
end
`

// marked is the rule of the waiters' mark, for scripts that put a waiter
// in line: a key whose value is a ranked token (keyserver.RankOf's rule)
// gets a '+' after it, KEEPTTL, once a waiter joins its line, and a
// release of a ranked token that carries no mark deletes the key without
// looking for a line: an uncontended lock costs Redis four commands (SET
// NX, and a release script that runs GET and DEL), not five. Keys held by
// unranked values (other libraries', whose own releases compare the value
// they stored) are never marked; their releases always look for a line.
// The statement marked marks v, the key's value, if it is a ranked token
// without the mark.
var marked = `
if ` + ranked("v") + ` then
	redis.call('SET', KEYS[1], v .. '+', 'KEEPTTL')
end
`

// ranked is the Lua condition that the string v (a local or an
// expression without side effects) is a ranked token without the waiters'
// mark (see marked). It is written out where it is tested, not called: a
// local function is a closure made anew at every run of the script, and
// the release script, which runs at every unlock, spent a fifth of its
// time making the three it defined (alone, on a key nobody held: 3.6 µs
// per call against 2.9 µs without them).
func ranked(v string) string {
	return fmt.Sprintf("#%[1]s == %[2]d and string.byte(%[1]s, %[3]d) == 46 and string.byte(%[1]s, -1) ~= 126",
		v, keyserver.TokenLen, rankDot+1)
}

// holder describes v, the value that refused the caller, as decodeHolder
// reads it: {left, order, ahead}, where left is the key's PTTL in
// milliseconds (at least 1, as a key under a millisecond from its expiry
// still exists; 0 for a key without one), order compares the holder's
// rank with the caller's by keyserver.Compare's rule (0 unranked, 1 the
// holder's first, 2 the caller's), and ahead is the local of that name
// (the waiters before the caller in line, or 0). A grant replies 1 instead. The
// rank test repeats keyserver.RankOf's, with its constants filled in from
// Go.
var holder = fmt.Sprintf(`
local function rank(t)
	if #t == %[1]d + 1 and string.byte(t, -1) == 43 then
		t = string.sub(t, 1, %[1]d)
	end
	if #t == %[1]d and string.byte(t, %[2]d) == 46 then
		return string.sub(t, 1, %[3]d)
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
return {left, order, ahead}
`, keyserver.TokenLen, rankDot+1, keyserver.RankLen)

// rankDot is where a ranked token has its dot (see keyserver.RankOf).
const rankDot = 16

// handOver, run with the lock key in KEYS[1] and its line in KEYS[2] once
// the key's holder let go of it, promises the key for claimTTL
// milliseconds (keyserver.ClaimTTL) to the first waiter in line, taking it
// out of line, and tells that waiter's Server its turn; with nobody in line
// it deletes the key. A line's member is the waiter's promise, n
// characters long (keyserver.TokenLen), then the channel its Server hears
// turns on; the turn is published there as the promise followed by the
// key. A release so publishes only when someone waits, and only to the
// waiter's process. A user whose ACL denies PUBLISH still hands over
// (pcall): the waiter then finds its turn by trying again.
const handOver = `
local function handOver(claimTTL, n)
	local next = redis.call('ZPOPMIN', KEYS[2])
	if next[1] then
		local promise = string.sub(next[1], 1, n)
		redis.call('SET', KEYS[1], promise, 'PX', claimTTL)
		pcall(redis.call, 'PUBLISH', string.sub(next[1], n + 1), promise .. KEYS[1])
	else
		redis.call('DEL', KEYS[1])
	end
end
`

// The scripts, by operation.
var (
	// setScript is Acquire and Extend: for Redis "store if absent" and
	// "re-create if absent (a restarted server)" are the same rule.
	// KEYS: key. ARGV: token, ttl, promise. Returns 1 or 0.
	setScript = newScript(own + "return 0\n")

	// holderScript is AcquireOrHolder: setScript, describing the holder
	// that refused. KEYS: key. ARGV: token, ttl, promise.
	holderScript = newScript(own + "local ahead = 0\n" + holder)

	// lineScript is AcquireInLine: holderScript, which also puts a
	// refused caller in line (a ZSET whose scores are all 0, so that its
	// members, each a caller's promise and then its channel, sort by rank),
	// keeps the line alive for ARGV[4] milliseconds (keyserver.LineTTL)
	// and counts the waiters ahead. A key promised to the caller is
	// claimed without touching the caller's place: the promise was made by
	// taking the caller out of line. The member ARGV[6], when not empty,
	// joins the line whatever the answer (AcquireInLine's next); a member
	// ARGV[5] that is empty (a caller without a rank) never does. A
	// refusal that put someone in line marks the holder's value (see
	// marked); a grant while someone may be in line (a claim, a caller
	// that was in line, a next that joined) stores the caller's token
	// marked. KEYS: key, line. ARGV: token, ttl, promise, line TTL, member,
	// next member.
	lineScript = newScript(`
local v = redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2], 'GET')
local renewed = ARGV[6] ~= ''
if renewed then
	redis.call('ZADD', KEYS[2], 0, ARGV[6])
	redis.call('PEXPIRE', KEYS[2], ARGV[4])
end
local mine = ARGV[1] .. '+'
if v == ARGV[3] and v ~= ARGV[1] then
	redis.call('SET', KEYS[1], mine, 'PX', ARGV[2])
	return 1
end
if not v or v == ARGV[1] or v == mine then
	if ARGV[5] ~= '' or renewed or v == mine then
		redis.call('SET', KEYS[1], mine, 'PX', ARGV[2])
	elseif v then
		redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
	end
	if ARGV[5] ~= '' then
		redis.call('ZREM', KEYS[2], ARGV[5])
	end
	return 1
end
local ahead = 0
if ARGV[5] ~= '' then
	redis.call('ZADD', KEYS[2], 0, ARGV[5])
	if not renewed then
		redis.call('PEXPIRE', KEYS[2], ARGV[4])
	end
	ahead = redis.call('ZRANK', KEYS[2], ARGV[5])
end
` + marked + holder)

	// releaseScript is Release: if the key holds the token itself (not a
	// promise to the token's call, which a failed attempt's clean-up must
	// not give away: see keyserver.Notifier), the key is handed over to
	// the next waiter or deleted; a ranked token without the waiters'
	// mark is deleted at once, as nobody joined its line (see marked).
	// KEYS: key, line. ARGV: token, claim TTL, promise length. Returns 1,
	// or 0 when another value holds the key or none does. It defines
	// handOver only past the common case, an unlock nobody waited for,
	// which so makes no closure (see ranked).
	releaseScript = newScript(`
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] and ` + ranked("v") + ` then
	redis.call('DEL', KEYS[1])
	return 1
end
if v ~= ARGV[1] and v ~= ARGV[1] .. '+' then
	return 0
end
` + handOver + `
handOver(ARGV[2], ARGV[3])
return 1
`)

	// leaveScript is LeaveLine: the caller leaves the line, and a key
	// promised to it is handed over. A caller that was still in line
	// holds no promise (a promise is made by taking the waiter out of
	// line), so the key is read only for one that was not. KEYS: key,
	// line. ARGV: member, promise, claim TTL, promise length. Returns 1.
	leaveScript = newScript(handOver + `
if redis.call('ZREM', KEYS[2], ARGV[1]) == 0 and redis.call('GET', KEYS[1]) == ARGV[2] then
	handOver(ARGV[3], ARGV[4])
end
return 1
`)

	// fencedScript is AcquireFenced: setScript that also reads the fence
	// counter KEYS[2] (absent is 0), atomically with the vote: counter·2
	// + 1 when granted, counter·2 when refused. Counters stay far below
	// 2^52, where Lua's numbers are exact. KEYS: key, fence key. ARGV:
	// token, ttl, promise.
	fencedScript = newScript(`
local f = tonumber(redis.call('GET', KEYS[2]) or '0')
local granted = (function()` + own + `return 0
end)()
return f * 2 + granted
`)

	// raiseScript is RaiseFence: it sets the fence counter KEYS[1] to
	// ARGV[1] if it holds less (absent is 0), and returns the counter as
	// it was. The counter has no TTL.
	raiseScript = newScript(`
local prev = tonumber(redis.call('GET', KEYS[1]) or '0')
if prev < tonumber(ARGV[1]) then
	redis.call('SET', KEYS[1], ARGV[1])
end
return prev
`)
)

// script is one Lua script of the Server; each Server keeps the digest
// SCRIPT LOAD gave it under the script's id.
type script struct {
	id  int
	src string
}

// scripts is every script, by id.
var scripts []*script

func newScript(src string) *script {
	s := &script{id: len(scripts), src: src}
	scripts = append(scripts, s)
	return s
}
