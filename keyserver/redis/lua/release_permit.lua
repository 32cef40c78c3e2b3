-- ReleaseHold of a PermitHold: frees a semaphore's slot if it holds the
-- token, and promises a free slot, for ARGV[3] ms, to the earliest watcher
-- that holds no promise, and tells it. The count stays until it lapses: a
-- call with another count looks at the slots.
-- KEYS[1]: the slot's key; KEYS[2]: key:watchers; KEYS[3]: key:told.
-- ARGV[1]: token; ARGV[2]: the promises' key's TTL in ms
-- (keyserver.LineTTL); ARGV[3]: a promise's TTL in ms
-- (keyserver.ClaimTTL); ARGV[4]: the semaphore key, which names the turn.
-- Reply: 1 or 0. A freed slot leaves key:held, if there (see
-- acquire_permit.lua).
--
-- key:watchers holds each watching call (its promise, 49 bytes, then its
-- Server's channel), scored by the server's time of its first watch: the
-- earliest is the first. key:told is the promises made, each '<watcher>
-- <deadline, server ms>,': a permit's AcquireHold keeps a free slot for
-- each live promise to another call, until that call claims it (a grant
-- takes it out of both) or the promise lapses. A watcher whose promise lapsed did
-- not come back in time: gone, or too slow to keep its place, it is
-- taken out of the watchers. A watch without a rank ('!' * 49) is told
-- and taken out, never promised.

-- tell publishes the watcher m's promise and the semaphore's key on its
-- channel; a user whose ACL denies PUBLISH still lets go (pcall).
local function tell(m)
	pcall(redis.call, 'PUBLISH', string.sub(m, 50), string.sub(m, 1, 49) .. ARGV[#ARGV])
end

if redis.call('GET', KEYS[1]) ~= ARGV[1] then
	return 0
end
redis.call('DEL', KEYS[1])
local slot = string.sub(KEYS[1], #ARGV[4] + 2)
if tonumber(slot) >= 1024 then -- recorded past keyserver.MaxInspected
	redis.call('ZREM', ARGV[4] .. ':held', slot)
end
local ws = redis.call('ZRANGE', KEYS[2], 0, -1)
if #ws == 0 then
	return 1
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local kept, out = '', {}
for m, d in string.gmatch(redis.call('GET', KEYS[3]) or '', '(%S+) (%d+),') do
	if tonumber(d) > now then
		kept = kept .. m .. ' ' .. d .. ','
	else
		redis.call('ZREM', KEYS[2], m)
	end
	out[m] = true
end
for _, m in ipairs(ws) do
	if not out[m] then
		if string.byte(m, 1) == 33 then
			redis.call('ZREM', KEYS[2], m)
		else
			kept = kept .. m .. ' ' .. string.format('%d', now + tonumber(ARGV[3])) .. ','
		end
		tell(m)
		break
	end
end
if kept == '' then
	redis.call('DEL', KEYS[3])
else
	redis.call('SET', KEYS[3], kept, 'PX', ARGV[2])
end
return 1
