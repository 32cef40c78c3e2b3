-- The end of a primitive's watch (the last of its call on a Server, which
-- no grant ended): the watcher leaves the watchers, and a promise made to
-- it passes to the earliest live watcher that holds none, as a release
-- would make it (see release_permit.lua and release_hold.lua).
-- KEYS[1]: key:watchers; KEYS[2]: key:told.
-- ARGV[1]: the watcher's member; ARGV[2]: how long a watcher lives after
-- its last watch, in ms (keyserver.LineTTL); ARGV[3]: a promise's TTL in
-- ms (keyserver.ClaimTTL); ARGV[4]: '1' for a semaphore, whose key:told
-- lists promises, '0' for a read-write lock, whose key:told is one
-- writer's promise; ARGV[5]: the primitive's key, which names the turn.
-- Reply: 1.

-- tell: see release_permit.lua.
local function tell(m)
	pcall(redis.call, 'PUBLISH', string.sub(m, 50), string.sub(m, 1, 49) .. ARGV[#ARGV])
end

redis.call('ZREM', KEYS[1], ARGV[1])
local told = redis.call('GET', KEYS[2])
if not told then
	return 1
end
local mine = string.sub(ARGV[1], 1, 49)
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local kept, promised, passed = '', {}, false
if ARGV[4] == '1' then
	for p, d in string.gmatch(told, '(%S+) (%d+),') do
		if p == mine then
			passed = true
		elseif tonumber(d) > now then
			kept = kept .. p .. ' ' .. d .. ','
			promised[p] = true
		end
	end
elseif told == mine then
	passed = true
end
if not passed then
	return 1
end
local ws = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
local alive, first = now - tonumber(ARGV[2]), nil
for i = 1, #ws, 2 do
	if tonumber(ws[i + 1]) >= alive and not promised[string.sub(ws[i], 1, 49)] and (not first or ws[i] < first) then
		first = ws[i]
	end
end
if first and string.byte(first, 49) == 125 then
	redis.call('DEL', KEYS[1], KEYS[2])
	for i = 1, #ws, 2 do
		if tonumber(ws[i + 1]) >= alive then
			tell(ws[i])
		end
	end
	return 1
end
local promise = kept
if first then
	redis.call('ZREM', KEYS[1], first)
	if string.byte(first, 1) ~= 33 then
		local p = string.sub(first, 1, 49)
		if ARGV[4] == '1' then
			promise = kept .. p .. ' ' .. string.format('%d', now + tonumber(ARGV[3])) .. ','
		else
			promise = p
		end
	end
end
if promise == '' then
	redis.call('DEL', KEYS[2])
else
	redis.call('SET', KEYS[2], promise, 'PX', ARGV[3])
end
if first then
	tell(first)
end
return 1
