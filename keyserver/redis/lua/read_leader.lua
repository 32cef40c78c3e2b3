-- ReadLeader: an election's leader.
-- KEYS[1]: the election's key.
-- Reply: {} when none leads, else {token, value, TTL left in ms (at
-- least 1)}.
local cur = redis.call('HMGET', KEYS[1], 't', 'v')
if not cur[1] then
	return {}
end
return {cur[1], cur[2], math.max(redis.call('PTTL', KEYS[1]), 1)}
