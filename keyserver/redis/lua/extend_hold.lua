-- ExtendHold of a read or write hold: renews the token's hold of a
-- read-write lock, as its writer or as a reader, or stores it again where
-- it would be granted.
-- KEYS[1]: key:w; KEYS[2]: key:r; KEYS[3]: key:wait.
-- ARGV[1]: token; ARGV[2]: TTL in ms; ARGV[3]: '1' for the writer, '0'
-- for a reader.
-- Reply: 1 or 0.
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
