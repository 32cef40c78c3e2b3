-- Release: lets go of the lock key if it holds the token itself, marked
-- or not; never a promise to the token's call, which a failed attempt's
-- clean-up must not give away (see keyserver.Notifier). The key goes to
-- the first waiter in line (handOver), or is deleted when nobody waits.
-- KEYS[1]: the lock key; KEYS[2]: its line (layout.LineKey).
-- ARGV[1]: token; ARGV[2]: claim TTL in ms (layout.ClaimTTL).
-- Reply: 1, or 0 when another value holds the key or none does.
--
-- First the common case: a plain token had nobody join its line (see
-- acquire_in_line.lua): deleted at once. The test is the prelude's plain
-- written out, a closure less on every uncontended lock.
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] and #v == TOKEN and string.byte(v, 17) == 46 and string.byte(v, -1) ~= 126 then
	redis.call('DEL', KEYS[1])
	return 1
end
if v ~= ARGV[1] and v ~= ARGV[1] .. '+' then
	return 0
end
handOver(KEYS[1], KEYS[2], ARGV[2])
return 1
