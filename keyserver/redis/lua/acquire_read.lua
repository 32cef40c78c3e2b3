-- AcquireRead: adds the token to a read-write lock's readers unless a
-- writer holds the lock or waits for it. A reader that holds is renewed
-- even while a writer waits.
-- KEYS[1]: key:w, the writer's token; KEYS[2]: key:r, a ZSET of reader
-- tokens scored by expiry (server time, ms); KEYS[3]: key:wait, the mark
-- of the writer that waited last; KEYS[4]: key:watchers.
-- ARGV[1]: token; ARGV[2]: TTL in ms; ARGV[3]: the caller's watcher
-- member, or ''.
-- Reply: {1, 0} when granted, else {0, TTL left in ms (at least 1)}.

-- The helpers of the read-write scripts: see acquire_write.lua.
local function clock()
	local t = redis.call('TIME')
	return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function outlive(key, ttl)
	if redis.call('PEXPIRE', key, ttl, 'NX') == 0 then
		redis.call('PEXPIRE', key, ttl, 'GT')
	end
end

local function unwatch(wkey, i)
	if ARGV[i] ~= '' then
		redis.call('ZREM', wkey, ARGV[i])
	end
end

local function readers()
	local now = clock()
	redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
	local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
	if first[2] then
		return 1, tonumber(first[2]) - now
	end
	return 0, 0
end

local function refuse(left)
	if ARGV[3] == '1' then
		redis.call('SET', KEYS[3], ARGV[4], 'PX', ARGV[5])
	end
	return {0, math.max(left, 1)}
end

local function addReader()
	redis.call('ZADD', KEYS[2], clock() + tonumber(ARGV[2]), ARGV[1])
	outlive(KEYS[2], ARGV[2])
end

if redis.call('EXISTS', KEYS[1], KEYS[3]) > 0 and not redis.call('ZSCORE', KEYS[2], ARGV[1]) then
	return {0, math.max(redis.call('PTTL', KEYS[1]), redis.call('PTTL', KEYS[3]), 1)}
end
addReader()
unwatch(KEYS[4], 3)
return {1, 0}
