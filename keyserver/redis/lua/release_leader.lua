-- ReleaseHold of a LeaderHold: ends the token's leadership of an election,
-- and tells every watcher (tellAll).
-- KEYS[1]: the election's key; KEYS[2]: key:watchers.
-- ARGV[1]: token; ARGV[2]: the election's key, which names the turn.
-- Reply: 1, or 0 when the token does not lead.
if redis.call('HGET', KEYS[1], 't') ~= ARGV[1] then
	return 0
end
redis.call('DEL', KEYS[1])
tellAll(KEYS[2])
return 1
