-- Guard.Set: sets the data key to ARGV[2] if the fence ARGV[1] is at least
-- the fence stored beside it (none stored: any fence passes), and stores
-- ARGV[1] as that fence, in one step. Otherwise changes nothing and
-- replies with the error "FENCESTALE <the stored fence>".
-- KEYS[1]: the data key. KEYS[2]: its fence key (redisfence.FenceKey).
-- ARGV[1]: the fence, decimal, no leading zero. ARGV[2]: the value.
-- ARGV[3]: the value's TTL in milliseconds, "0" for none.
-- Reply: the fence stored before, "0" for none.

-- guard.lua

local fence = ARGV[1]
local seen, refused = admit(KEYS[2], fence)
if refused then return refused end
if ARGV[3] == '0' then
	redis.call('SET', KEYS[1], ARGV[2])
else
	redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
end
if seen ~= fence then
	redis.call('SET', KEYS[2], fence)
end
return seen or '0'
