-- ReleaseHold of a PermitHold: frees a semaphore's slot if it holds the
-- token, and promises a free slot, for ARGV[3] ms, to the earliest watcher
-- that holds no promise, and tells it. The count stays until it lapses: a
-- call with another count looks at the slots.
-- KEYS[1]: the slot's key; KEYS[2]: key:watchers; KEYS[3]: key:told.
-- ARGV[1]: token; ARGV[2]: key:told's TTL in ms (keyserver.LineTTL);
-- ARGV[3]: a promise's TTL in ms (layout.ClaimTTL); ARGV[4], ARGV[5]:
-- the releasing call's watcher member and its score, or '' (Server.rejoin);
-- ARGV[6]: the semaphore key, which names the turn.
-- Reply: 1 or 0. A freed slot leaves key:held (held), if there.
-- key:watchers scores each watching call's member by when its call began
-- (watch.lua). key:told holds the promises made, each '<member> <deadline,
-- server ms>,': AcquireHold keeps a free slot for each live promise to
-- another call until that call claims it or the promise lapses (live).
enlist(KEYS[2], ARGV[4], ARGV[5], ARGV[2])
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
	return 0
end
redis.call('DEL', KEYS[1])
local slot = string.sub(KEYS[1], #ARGV[6] + 2)
if tonumber(slot) >= MAX_INSPECTED then
	redis.call('ZREM', ARGV[6] .. ':held', slot)
end
local ws = redis.call('ZRANGE', KEYS[2], 0, -1)
if #ws == 0 then
	return 1
end
local now = clock()
local kept, out = live(redis.call('GET', KEYS[3]) or '', KEYS[2], now)
passOn(ws, out, kept, now, KEYS[2], KEYS[3], ARGV[3], ARGV[2])
return 1
