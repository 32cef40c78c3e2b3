-- AcquireHold of a ReadHold: adds the token to a read-write lock's readers
-- unless a writer holds the lock, waits for it, or was promised it (a
-- live promise in key:told keeps readers out). A reader that holds is
-- renewed even while a writer waits.
-- KEYS: as acquire_write.lua's.
-- ARGV[1]: token; ARGV[2]: TTL in ms; ARGV[3]: the caller's watcher
-- member, or ''.
-- Reply: {1, 0} when granted, else {0, TTL left in ms (at least 1)}.
if redis.call('EXISTS', KEYS[1], KEYS[3], KEYS[5]) > 0 and not redis.call('ZSCORE', KEYS[2], ARGV[1]) then
	local left = math.max(redis.call('PTTL', KEYS[1]), redis.call('PTTL', KEYS[3]))
	local now = clock()
	for _, d in string.gmatch(redis.call('GET', KEYS[5]) or '', '(%S+) (%d+),') do
		left = math.max(left, tonumber(d) - now)
	end
	if left > 0 then
		return {0, left}
	end
end
addReader()
unwatch(KEYS[4], ARGV[3])
return {1, 0}
