-- ReleasePermit: frees a semaphore's slot if it holds the token, and
-- promises a free slot, for ARGV[3] ms, to the earliest live watcher that
-- holds no promise yet: it takes it out of the watchers and tells it.
-- The count stays until it lapses: a call with another count looks at
-- the slots.
-- KEYS[1]: the slot's key; KEYS[2]: key:watchers; KEYS[3]: key:told.
-- ARGV[1]: token; ARGV[2]: how long a watcher lives after its last watch,
-- in ms (keyserver.LineTTL); ARGV[3]: a promise's TTL in ms
-- (keyserver.ClaimTTL); ARGV[4]: the semaphore key, which names the turn.
-- Reply: 1 or 0.
--
-- key:watchers scores each watcher (its call's promise, 49 bytes, then
-- its Server's channel) by the server's time of its last watch; the
-- earliest is the least member, as a promise sorts by rank. key:told is
-- the promises made, each '<promise> <deadline, server ms>,', and lives
-- as long as the last made: AcquirePermit keeps a free slot for each
-- promise to another call until that call claims it or it lapses. A
-- watch without a rank ('!' * 49) is told, never promised.
-- tell publishes the watcher m's promise and the semaphore's key on its
-- channel; a user whose ACL denies PUBLISH still lets go (pcall).
local function tell(m)
	pcall(redis.call, 'PUBLISH', string.sub(m, 50), string.sub(m, 1, 49) .. ARGV[#ARGV])
end

if redis.call('GET', KEYS[1]) ~= ARGV[1] then
	return 0
end
redis.call('DEL', KEYS[1])
local ws = redis.call('ZRANGE', KEYS[2], 0, -1, 'WITHSCORES')
if #ws == 0 then
	return 1
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local kept, promised = '', {}
for p, d in string.gmatch(redis.call('GET', KEYS[3]) or '', '(%S+) (%d+),') do
	if tonumber(d) > now then
		kept = kept .. p .. ' ' .. d .. ','
		promised[p] = true
	end
end
local alive = now - tonumber(ARGV[2])
local first, dead = nil, false
for i = 1, #ws, 2 do
	if tonumber(ws[i + 1]) < alive then
		dead = true
	elseif not promised[string.sub(ws[i], 1, 49)] and (not first or ws[i] < first) then
		first = ws[i]
	end
end
if dead then
	redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. string.format('%d', alive))
end
if first then
	redis.call('ZREM', KEYS[2], first)
	local p = string.sub(first, 1, 49)
	if string.byte(first, 1) ~= 33 then
		redis.call('SET', KEYS[3], kept .. p .. ' ' .. string.format('%d', now + tonumber(ARGV[3])) .. ',', 'PX', ARGV[3])
	end
	tell(first)
end
return 1
