-- LeaveLine: the waiter leaves the lock key's line, and a key promised to
-- it is handed over. A waiter still in line holds no promise (one is made
-- by taking the waiter out of line), so the key is read only for one that
-- was not.
-- KEYS[1]: the lock key; KEYS[2]: its line (keyserver.LineKey).
-- ARGV[1]: the waiter's member; ARGV[2]: its promise; ARGV[3]: claim TTL
-- in ms (keyserver.ClaimTTL); ARGV[4]: a promise's length (tonumber: see
-- release.lua).
-- Reply: 1.

-- handOver: see release.lua.
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

if redis.call('ZREM', KEYS[2], ARGV[1]) == 0 and redis.call('GET', KEYS[1]) == ARGV[2] then
	handOver(ARGV[3], tonumber(ARGV[4]))
end
return 1
