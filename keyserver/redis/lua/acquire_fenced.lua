-- AcquireFenced: acquire.lua that also reads the fence counter,
-- atomically with the vote.
-- KEYS[1]: the lock key; KEYS[2]: its fence counter (layout.FenceKey).
-- ARGV[1]: token; ARGV[2]: TTL in ms; ARGV[3]: the caller's promise.
-- Reply: counter*2 + 1 when granted, counter*2 when refused (an absent
-- counter is 0). Counters stay far below 2^52, where Lua's numbers are
-- exact.
local f = tonumber(redis.call('GET', KEYS[2]) or '0')
if take(KEYS[1]) then
	return f * 2
end
return f * 2 + 1
