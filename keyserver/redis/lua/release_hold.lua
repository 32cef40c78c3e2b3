-- ReleaseHold: ends the token's hold of a read-write lock, as its writer
-- or as a reader. Once nobody holds the lock (no writer, no live reader)
-- and it is promised to nobody, it tells the earliest live watcher: a
-- writer is taken out of the watchers and promised the lock for ARGV[4]
-- ms (key:told, which keeps readers and other writers out); a reader
-- has every watcher told, as readers share. A reader whose hold expired
-- and whom nothing has tidied away yet is still let go, and reported as
-- held.
-- KEYS[1]: key:w; KEYS[2]: key:r; KEYS[3]: key:watchers; KEYS[4]:
-- key:told.
-- ARGV[1]: token; ARGV[2]: '1' for the writer, '0' for a reader; ARGV[3]:
-- how long a watcher lives after its last watch, in ms
-- (keyserver.LineTTL); ARGV[4]: a promise's TTL in ms
-- (keyserver.ClaimTTL); ARGV[5]: the lock's key, which names the turn.
-- Reply: 1 or 0.
--
-- Watchers: see release_permit.lua; a reader's promise ends in '}' (125).

-- tell publishes the watcher m's promise and the lock's key on its
-- channel; a user whose ACL denies PUBLISH still lets go (pcall).
local function tell(m)
	pcall(redis.call, 'PUBLISH', string.sub(m, 50), string.sub(m, 1, 49) .. ARGV[#ARGV])
end

if ARGV[2] == '1' then
	if redis.call('GET', KEYS[1]) ~= ARGV[1] then
		return 0
	end
	redis.call('DEL', KEYS[1])
elseif redis.call('ZREM', KEYS[2], ARGV[1]) == 0 then
	return 0
end
local ws = redis.call('ZRANGE', KEYS[3], 0, -1, 'WITHSCORES')
if #ws == 0 or redis.call('EXISTS', KEYS[1], KEYS[4]) > 0 then
	return 1
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if ARGV[2] == '0' and redis.call('ZCOUNT', KEYS[2], '(' .. string.format('%d', now), '+inf') > 0 then
	return 1
end
local alive = now - tonumber(ARGV[3])
local first, dead = nil, false
for i = 1, #ws, 2 do
	if tonumber(ws[i + 1]) < alive then
		dead = true
	elseif not first or ws[i] < first then
		first = ws[i]
	end
end
if dead then
	redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', '(' .. string.format('%d', alive))
end
if not first then
	return 1
end
if string.byte(first, 49) == 125 then
	redis.call('DEL', KEYS[3])
	for i = 1, #ws, 2 do
		if tonumber(ws[i + 1]) >= alive then
			tell(ws[i])
		end
	end
	return 1
end
redis.call('ZREM', KEYS[3], first)
if string.byte(first, 1) ~= 33 then
	redis.call('SET', KEYS[4], string.sub(first, 1, 49), 'PX', ARGV[4])
end
tell(first)
return 1
