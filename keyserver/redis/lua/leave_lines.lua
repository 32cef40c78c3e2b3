-- LeaveLines: leave_line.lua for every key of a set: the waiter leaves
-- each key's line, and a key promised to it is handed over.
-- KEYS: the set's lock keys, each followed by its line (one Cluster
-- slot). ARGV[1]: the waiter's member; ARGV[2]: its promise; ARGV[3]:
-- claim TTL in ms (keyserver.ClaimTTL); ARGV[4]: a promise's length.
-- Reply: 1.
local plen = tonumber(ARGV[4]) -- see release.lua
for i = 1, #KEYS, 2 do
	local k, line = KEYS[i], KEYS[i + 1]
	if redis.call('ZREM', line, ARGV[1]) == 0 and redis.call('GET', k) == ARGV[2] then
		local next = redis.call('ZPOPMIN', line)
		if next[1] then
			local p = string.sub(next[1], 1, plen)
			redis.call('SET', k, p, 'PX', ARGV[3])
			pcall(redis.call, 'PUBLISH', string.sub(next[1], plen + 1), p .. k)
		else
			redis.call('DEL', k)
		end
	end
end
return 1
