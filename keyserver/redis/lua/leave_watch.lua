-- The end of a primitive's watch (the last of its call on a Server, which
-- no grant ended): the watcher leaves the watchers, and a promise made to
-- it passes to the earliest watcher that holds none, as a release would
-- make it (see release_permit.lua and release_hold.lua).
-- KEYS[1]: key:watchers; KEYS[2]: key:told.
-- ARGV[1]: the watcher's member; ARGV[2]: the promises' key's TTL in ms
-- (keyserver.LineTTL); ARGV[3]: a promise's TTL in ms
-- (keyserver.ClaimTTL); ARGV[4]: the primitive's key, which names the
-- turn.
-- Reply: 1.

-- tell: see release_permit.lua.
local function tell(m)
	pcall(redis.call, 'PUBLISH', string.sub(m, 50), string.sub(m, 1, 49) .. ARGV[#ARGV])
end

redis.call('ZREM', KEYS[1], ARGV[1])
local told = redis.call('GET', KEYS[2])
if not told or not string.find(told, ARGV[1] .. ' ', 1, true) then
	return 1
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local kept, out = '', {}
for m, d in string.gmatch(told, '(%S+) (%d+),') do
	if m ~= ARGV[1] and tonumber(d) > now then
		kept = kept .. m .. ' ' .. d .. ','
	elseif m ~= ARGV[1] then
		redis.call('ZREM', KEYS[1], m)
	end
	out[m] = true
end
local ws = redis.call('ZRANGE', KEYS[1], 0, -1)
for _, m in ipairs(ws) do
	if not out[m] then
		if string.byte(m, 49) == 125 then
			redis.call('DEL', KEYS[1])
			for _, r in ipairs(ws) do
				if not out[r] then
					tell(r)
				end
			end
		elseif string.byte(m, 1) == 33 then
			redis.call('ZREM', KEYS[1], m)
			tell(m)
		else
			kept = kept .. m .. ' ' .. string.format('%d', now + tonumber(ARGV[3])) .. ','
			tell(m)
		end
		break
	end
end
if kept == '' then
	redis.call('DEL', KEYS[2])
else
	redis.call('SET', KEYS[2], kept, 'PX', ARGV[2])
end
return 1
