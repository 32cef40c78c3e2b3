-- Guard.Set: sets the data key to ARGV[2] if the fence ARGV[1] is at least
-- the fence stored beside it (none stored: any fence passes), and stores
-- ARGV[1] as that fence, in one step. Otherwise changes nothing and
-- replies with the error "FENCESTALE <the stored fence>".
-- KEYS[1]: the data key. KEYS[2]: its fence key (redisfence.FenceKey).
-- ARGV[1]: the fence, decimal, no leading zero. ARGV[2]: the value.
-- ARGV[3]: the value's TTL in milliseconds, "0" for none.
-- Reply: the fence stored before, "0" for none.

-- older: a < b for decimal numbers without leading zeros, exact for any
-- uint64 (Lua's numbers are not, past 2^53).
local function older(a, b)
	if #a ~= #b then return #a < #b end
	for i = 1, #a do
		local x, y = string.byte(a, i), string.byte(b, i)
		if x ~= y then return x < y end
	end
	return false
end

local fence = ARGV[1]
local seen = redis.call('GET', KEYS[2])
if seen then
	if not string.match(seen, '^[1-9]%d*$') then
		return redis.error_reply('ERR ' .. KEYS[2] .. ' holds no fence')
	end
	if older(fence, seen) then
		return redis.error_reply('FENCESTALE ' .. seen)
	end
end
if ARGV[3] == '0' then
	redis.call('SET', KEYS[1], ARGV[2])
else
	redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
end
if seen ~= fence then
	redis.call('SET', KEYS[2], fence)
end
return seen or '0'
