-- ReleaseAll: release.lua for every key of a set: a key that holds the
-- token, marked or not, goes to the first waiter in its line, or is
-- deleted when nobody waits.
-- KEYS: the set's lock keys, each followed by its line (one Cluster
-- slot). ARGV[1]: token; ARGV[2]: claim TTL in ms (keyserver.ClaimTTL);
-- ARGV[3]: a promise's length (49).
-- Reply: how many keys were let go.
local n = 0
for i = 1, #KEYS, 2 do
	local key, line = KEYS[i], KEYS[i + 1]
	local v = redis.call('GET', key)
	if v == ARGV[1] and #v == 49 and string.byte(v, 17) == 46 and string.byte(v, -1) ~= 126 then
		-- release.lua's common case: a ranked token without the waiters'
		-- mark had nobody join its line: deleted at once.
		n = n + 1
		redis.call('DEL', key)
	elseif v == ARGV[1] or v == ARGV[1] .. '+' then
		n = n + 1
		local next = redis.call('ZPOPMIN', line)
		if next[1] then
			local promise = string.sub(next[1], 1, ARGV[3])
			redis.call('SET', key, promise, 'PX', ARGV[2])
			pcall(redis.call, 'PUBLISH', string.sub(next[1], ARGV[3] + 1), promise .. key)
		else
			redis.call('DEL', key)
		end
	end
end
return n
