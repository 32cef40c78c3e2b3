-- ExtendHold of a PermitHold: renews a semaphore's slot if it holds the
-- token, or stores it again if it is free and below the stored count. A
-- slot stored again after a restart takes slot+1 as the count, the least
-- it can be.
-- KEYS[1]: the semaphore key, its stored count; KEYS[2]: the slot's key.
-- ARGV[1]: the slot; ARGV[2]: token; ARGV[3]: TTL in ms.
-- Reply: 1 or 0. The slot is recorded in key:held (see
-- acquire_permit.lua).

-- held records slot, taken or renewed for ttl ms, in key:held: the
-- semaphore's held slots past the first 1024 (keyserver.MaxInspected,
-- which Inspect reads itself), each scored by the server time (ms) at
-- which it lapses, so that Inspect counts them however many permits there
-- are. It first drops the slots that lapsed. A slot below 1024 costs
-- nothing.
local function held(slot, ttl)
	if tonumber(slot) < 1024 then
		return
	end
	local idx = KEYS[1] .. ':held'
	local t = redis.call('TIME')
	local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
	redis.call('ZREMRANGEBYSCORE', idx, '-inf', now)
	local fresh = redis.call('EXISTS', idx) == 0
	redis.call('ZADD', idx, now + tonumber(ttl), slot)
	if fresh then
		redis.call('PEXPIRE', idx, ttl)
	else
		redis.call('PEXPIRE', idx, ttl, 'GT')
	end
end

local cur = redis.call('GET', KEYS[2])
if cur and cur ~= ARGV[2] then
	return 0
end
local stored = redis.call('GET', KEYS[1])
if stored and tonumber(ARGV[1]) >= tonumber(stored) then
	return 0
end
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
if stored then
	redis.call('PEXPIRE', KEYS[1], ARGV[3], 'GT')
else
	redis.call('SET', KEYS[1], tonumber(ARGV[1]) + 1, 'PX', ARGV[3])
end
held(ARGV[1], ARGV[3])
return 1
