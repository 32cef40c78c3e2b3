-- ExtendHold of a read or write hold: renews the token's hold of a
-- read-write lock, as its writer or as a reader, or stores it again where
-- it would be granted.
-- KEYS[1]: key:w; KEYS[2]: key:r; KEYS[3]: key:wait.
-- ARGV[1]: token; ARGV[2]: TTL in ms; ARGV[3]: '1' for the writer, '0'
-- for a reader.
-- Reply: 1 or 0.

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

-- readers drops the expired readers and returns how many are left, with
-- the shortest TTL left among them.
local function readers()
	local now = clock()
	redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
	local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
	if first[2] then
		return 1, tonumber(first[2]) - now
	end
	return 0, 0
end

-- addReader adds or renews the token as a reader; key:r lives as long
-- as its last reader.
local function addReader()
	redis.call('ZADD', KEYS[2], clock() + tonumber(ARGV[2]), ARGV[1])
	outlive(KEYS[2], ARGV[2])
end

local n = readers()
if ARGV[3] == '1' then
	local w = redis.call('GET', KEYS[1])
	if (w and w ~= ARGV[1]) or n > 0 then
		return 0
	end
	redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
	return 1
end
if not redis.call('ZSCORE', KEYS[2], ARGV[1]) and redis.call('EXISTS', KEYS[1]) == 1 then
	return 0
end
addReader()
return 1
