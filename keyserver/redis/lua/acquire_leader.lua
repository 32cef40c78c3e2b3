-- AcquireHold and ExtendHold of a LeaderHold: stores the token and value
-- as an election's leader if none leads or the token does, renewing its
-- TTL, and reads the term counter; a new leader or value is told to every
-- watcher (tellAll).
-- KEYS[1]: the election's key, a hash of t (token) and v (value);
-- KEYS[2]: its term counter (layout.FenceKey); KEYS[3]: key:watchers.
-- ARGV[1]: token; ARGV[2]: value; ARGV[3]: TTL in ms; ARGV[4]: the
-- election's key, which names the turn.
-- Reply: {1 when it leads else 0, the term counter (absent is 0)}.
local f = tonumber(redis.call('GET', KEYS[2]) or '0')
local cur = redis.call('HMGET', KEYS[1], 't', 'v')
if cur[1] and cur[1] ~= ARGV[1] then
	return {0, f}
end
redis.call('HSET', KEYS[1], 't', ARGV[1], 'v', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
if cur[1] ~= ARGV[1] or cur[2] ~= ARGV[2] then
	tellAll(KEYS[3])
end
return {1, f}
