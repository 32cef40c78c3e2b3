-- AcquireHold of a ReadHold: adds the token to a read-write lock's readers
-- unless a writer holds the lock, waits for it, or was promised it. A
-- reader that holds is renewed even while a writer waits.
-- KEYS[1]: key:w, the writer's token; KEYS[2]: key:r, a ZSET of reader
-- tokens scored by expiry (server time, ms); KEYS[3]: key:wait, the mark
-- of the writer that waited last; KEYS[4]: key:watchers; KEYS[5]:
-- key:told, the promise of the lock to a writer ('<watcher> <deadline,
-- server ms>,'), which keeps readers out while it lives.
-- ARGV[1]: token; ARGV[2]: TTL in ms; ARGV[3]: the caller's watcher
-- member, or ''.
-- Reply: {1, 0} when granted, else {0, TTL left in ms (at least 1)}.

-- clock is the server's time in ms: readers' expiries in key:r are
-- absolute.
local function clock()
	local t = redis.call('TIME')
	return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- outlive makes key live at least ttl ms more, never less than it has:
-- a key without a TTL gets one (NX), one with a TTL keeps the longer (GT).
local function outlive(key, ttl)
	if redis.call('PEXPIRE', key, ttl, 'NX') == 0 then
		redis.call('PEXPIRE', key, ttl, 'GT')
	end
end

-- unwatch takes the granted caller, member ARGV[i] unless empty, out of
-- the watchers wkey.
local function unwatch(wkey, i)
	if ARGV[i] ~= '' then
		redis.call('ZREM', wkey, ARGV[i])
	end
end

-- addReader adds or renews the token as a reader; key:r lives as long
-- as its last reader.
local function addReader()
	redis.call('ZADD', KEYS[2], clock() + tonumber(ARGV[2]), ARGV[1])
	outlive(KEYS[2], ARGV[2])
end

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
unwatch(KEYS[4], 3)
return {1, 0}
