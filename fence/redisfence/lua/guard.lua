-- The guard of both scripts, put in place of their "-- guard.lua" line.

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

-- admit: the fence stored at key (nil for none) when fence may write
-- beside it, being at least that one; else nil and the error to reply.
local function admit(key, fence)
	local seen = redis.call('GET', key)
	if seen then
		if not string.match(seen, '^[1-9]%d*$') then
			return nil, redis.error_reply('ERR ' .. key .. ' holds no fence')
		end
		if older(fence, seen) then
			return nil, redis.error_reply('FENCESTALE ' .. seen)
		end
	end
	return seen
end
