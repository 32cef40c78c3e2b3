-- LeaveLine and LeaveLines: the waiter leaves the line of each key of a
-- set (of one key for LeaveLine), and a key promised to it is handed
-- over. A waiter still in line holds no promise (one is made by taking
-- the waiter out of line), so the key is read only for one that was not.
-- KEYS: the lock keys, each followed by its line (one Cluster slot).
-- ARGV[1]: the waiter's member; ARGV[2]: its promise; ARGV[3]: claim TTL
-- in ms (layout.ClaimTTL).
-- Reply: 1.
for i = 1, #KEYS, 2 do
	local k, line = KEYS[i], KEYS[i + 1]
	if redis.call('ZREM', line, ARGV[1]) == 0 and redis.call('GET', k) == ARGV[2] then
		handOver(k, line, ARGV[3])
	end
end
return 1
