-- AcquireFenced: acquire.lua that also reads the fence counter,
-- atomically with the vote.
-- KEYS[1]: the lock key; KEYS[2]: its fence counter (keyserver.FenceKey).
-- ARGV[1]: token; ARGV[2]: TTL in ms; ARGV[3]: the caller's promise.
-- Reply: counter*2 + 1 when granted, counter*2 when refused (an absent
-- counter is 0). Counters stay far below 2^52, where Lua's numbers are
-- exact.
local f = tonumber(redis.call('GET', KEYS[2]) or '0')
-- granted is acquire.lua, run as a function.
local granted = (function()
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
	return 0
end)()
return f * 2 + granted
