-- ReleaseInLine: release.lua for a waiter that gives back what a failed
-- attempt was granted: when others wait, it takes its place in line again
-- before the key is handed over, so that the key goes to the earliest
-- waiter counting it, itself included, not to the waiter behind it. With
-- nobody in line the key is deleted and the caller joins no line.
-- KEYS[1]: the lock key; KEYS[2]: its line (layout.LineKey).
-- ARGV[1]: token; ARGV[2]: claim TTL in ms (layout.ClaimTTL);
-- ARGV[3]: the caller's member; ARGV[4]: the line's TTL in ms.
-- Reply: 1, or 0 when another value holds the key or none does.
local v = redis.call('GET', KEYS[1])
if v ~= ARGV[1] and v ~= ARGV[1] .. '+' then
	return 0
end
if redis.call('EXISTS', KEYS[2]) == 1 then
	join(KEYS[1], KEYS[2], ARGV[3], ARGV[4])
end
handOver(KEYS[1], KEYS[2], ARGV[2])
return 1
