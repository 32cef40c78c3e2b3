-- AcquirePermit: takes a slot of a semaphore for the token, after
-- checking the permits against the stored count.
-- KEYS[1]: the semaphore key, its stored count; KEYS[2]: the slot's key
-- (key:N); KEYS[3]: key:watchers.
-- ARGV[1]: permits; ARGV[2]: the slot; ARGV[3]: token; ARGV[4]: TTL in
-- ms; ARGV[5]: the most free slots to list (keyserver.MaxFreeHint);
-- ARGV[6]: the caller's watcher member, or ''.
-- Reply: {1, 0} when granted; {-1, stored} when the stored count differs
-- while a slot is held; else {0, the soonest TTL left among the slots
-- (at least 1), free slots...}.
--
-- The count lives at least as long as every slot taken under it: set
-- with a TTL, it needs only PEXPIRE GT. Slot keys built here from KEYS[1]
-- share its hash tag, and so its Cluster slot. A refusal looks at the
-- first 64 slots (2*keyserver.MaxFreeHint), a differing count at the
-- first 1024, so that it costs a few dozen commands however many permits
-- a semaphore has.

-- semHeld reports whether any of the first n slots is held; n past 1024
-- counts as held (a count above that binds until it lapses, at most a
-- TTL after its last grant or extension).
local function semHeld(n)
	if n > 1024 then
		return true
	end
	for i = 0, n - 1 do
		if redis.call('EXISTS', KEYS[1] .. ':' .. i) == 1 then
			return true
		end
	end
	return false
end

-- unwatch takes the granted caller, member ARGV[i] unless empty, out of
-- the watchers wkey.
local function unwatch(wkey, i)
	if ARGV[i] ~= '' then
		redis.call('ZREM', wkey, ARGV[i])
	end
end

local stored = redis.call('GET', KEYS[1])
if stored and stored ~= ARGV[1] then
	if semHeld(tonumber(stored)) then
		return {-1, tonumber(stored)}
	end
	stored = nil
end
local ok = redis.call('SET', KEYS[2], ARGV[3], 'NX', 'PX', ARGV[4])
if not ok and redis.call('GET', KEYS[2]) == ARGV[3] then
	ok = redis.call('PEXPIRE', KEYS[2], ARGV[4])
end
if ok then
	if stored then
		redis.call('PEXPIRE', KEYS[1], ARGV[4], 'GT')
	else
		redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[4])
	end
	unwatch(KEYS[3], 6)
	return {1, 0}
end
local reply, soonest = {0, 0}, nil
local limit = tonumber(ARGV[5])
for i = 0, math.min(tonumber(ARGV[1]), 64) - 1 do
	local left = redis.call('PTTL', KEYS[1] .. ':' .. i)
	if left == -2 then
		if #reply - 2 < limit then
			reply[#reply + 1] = i
		end
	elseif left > 0 and (not soonest or left < soonest) then
		soonest = left
	end
end
reply[2] = soonest or 1
return reply
