-- Acquire, once its SET NX was refused, Extend ("store if absent" and
-- "re-create if absent (a restarted server)" are one rule for Redis), and
-- AcquireFenced, which also reads the fence counter with the vote.
-- KEYS[1]: the lock key; KEYS[2], for AcquireFenced: its fence counter
-- (layout.FenceKey).
-- ARGV[1]: token; ARGV[2]: TTL in ms; ARGV[3]: the caller's promise
-- (layout.PromiseOf the token; the token itself if it has no rank).
-- Reply: counter*2 + 1 when the key is the caller's, else counter*2 (the
-- counter is 0 without KEYS[2] or when absent; it stays far below 2^52,
-- where Lua's numbers are exact).
--
-- SET NX GET (Redis 7.0) stores the token in a free key and returns what
-- it held; a key of another type fails with WRONGTYPE before any write.
-- A key holding the token, marked ('+') or not, or the caller's promise
-- is the caller's (take): renewed, keeping the mark; a claimed promise
-- gets it, as one is made only to a waiter.
local f = 0
if KEYS[2] then
	f = tonumber(redis.call('GET', KEYS[2]) or '0')
end
if take(KEYS[1]) then
	return f * 2
end
return f * 2 + 1
