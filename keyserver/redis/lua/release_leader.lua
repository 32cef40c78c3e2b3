-- ReleaseHold of a LeaderHold: ends the token's leadership of an election,
-- and tells every watcher.
-- KEYS[1]: the election's key; KEYS[2]: key:watchers.
-- ARGV[1]: token; ARGV[2]: the election's key, which names the turn.
-- Reply: 1, or 0 when the token does not lead.

-- tell, notifyAll: see release_permit.lua.
local function tell(m)
	pcall(redis.call, 'PUBLISH', string.sub(m, 50), string.sub(m, 1, 49) .. ARGV[#ARGV])
end
local function notifyAll(wkey)
	local ms = redis.call('ZRANGE', wkey, 0, -1)
	if #ms > 0 then
		redis.call('DEL', wkey)
		for _, m in ipairs(ms) do
			tell(m)
		end
	end
end

if redis.call('HGET', KEYS[1], 't') ~= ARGV[1] then
	return 0
end
redis.call('DEL', KEYS[1])
notifyAll(KEYS[2])
return 1
