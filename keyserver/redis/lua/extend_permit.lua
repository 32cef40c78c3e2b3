-- ExtendHold of a PermitHold: renews a semaphore's slot if it holds the
-- token, or stores it again if it is free and below the stored count. A
-- slot stored again after a restart takes slot+1 as the count, the least
-- it can be.
-- KEYS[1]: the semaphore key, its stored count; KEYS[2]: the slot's key.
-- ARGV[1]: the slot; ARGV[2]: token; ARGV[3]: TTL in ms.
-- Reply: 1 or 0. The slot is recorded as acquire_permit.lua's (held).
local cur = redis.call('GET', KEYS[2])
if cur and cur ~= ARGV[2] then
	return 0
end
local stored = redis.call('GET', KEYS[1])
if stored and tonumber(ARGV[1]) >= tonumber(stored) then
	return 0
end
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
held(ARGV[1], ARGV[3], stored, tonumber(ARGV[1]) + 1)
return 1
