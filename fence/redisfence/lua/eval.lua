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

-- guard.lua

local fence = ARGV[1]
local seen, refused = admit(KEYS[1], fence)
if refused then return refused end
local reply = body({unpack(KEYS, 2)}, {unpack(ARGV, 2)})
if seen ~= fence then
	redis.call('SET', KEYS[1], fence)
end
return reply
