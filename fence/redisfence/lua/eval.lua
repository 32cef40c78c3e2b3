-- Guard.Eval: runs the caller's script, in place of the body below, if the
-- fence ARGV[1] is at least the fence stored in KEYS[1] (none stored: any
-- fence passes); then stores ARGV[1] there and replies with the body's
-- reply. Otherwise runs nothing, changes nothing and replies with the
-- error "FENCESTALE <the stored fence>". The body sees KEYS and ARGV
-- without the guard's first entries, as if the caller's script ran alone.
-- A body that raises an error leaves the fence as it was.
-- KEYS[1]: the fence key (redisfence.FenceKey of the caller's first key).
-- KEYS[2...]: the caller's keys.
-- ARGV[1]: the fence, decimal, no leading zero. ARGV[2...]: the caller's
-- arguments.
-- Reply: the body's.

-- The body comes first, so that it sees none of the guard's locals.
local function body(KEYS, ARGV)
return nil -- the caller's script
end

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
local seen = redis.call('GET', KEYS[1])
if seen then
	if not string.match(seen, '^[1-9]%d*$') then
		return redis.error_reply('ERR ' .. KEYS[1] .. ' holds no fence')
	end
	if older(fence, seen) then
		return redis.error_reply('FENCESTALE ' .. seen)
	end
end
local reply = body({unpack(KEYS, 2)}, {unpack(ARGV, 2)})
if seen ~= fence then
	redis.call('SET', KEYS[1], fence)
end
return reply
