-- Acquire, once its SET NX was refused, and Extend: for Redis "store if
-- absent" and "re-create if absent (a restarted server)" are one rule.
-- KEYS[1]: the lock key.
-- ARGV[1]: token; ARGV[2]: TTL in ms; ARGV[3]: the caller's promise
-- (layout.PromiseOf the token; the token itself if it has no rank).
-- Reply: 1 when the key is the caller's, 0 when another value holds it.
--
-- SET NX GET (Redis 7.0) stores the token if the key is free and returns
-- what it held; a key of another type fails with WRONGTYPE before any
-- write. A key holding the token, the token with the waiters' mark ('+')
-- or the caller's promise is the caller's: it is renewed, keeping the
-- mark; a claimed promise gets it, as one is made only to a waiter.
if take(KEYS[1]) then
	return 0
end
return 1
