-- AcquireHold of a PermitHold: takes a slot of a semaphore for the token,
-- after checking the permits against the stored count, unless the free
-- slots are kept for the calls that releases promised one (see
-- release_permit.lua).
-- KEYS[1]: the semaphore key, its stored count; KEYS[2]: the slot's key
-- (key:N); KEYS[3]: key:watchers; KEYS[4]: key:told.
-- ARGV[1]: permits; ARGV[2]: the slot; ARGV[3]: token; ARGV[4]: TTL in
-- ms; ARGV[5]: the most free slots to list (layout.MaxFreeHint);
-- ARGV[6]: the caller's watcher member, or ''; ARGV[7]: the caller's
-- promise (layout.PromiseOf), or '' (no rank).
-- Reply: {1, 0} when granted; {-1, stored} when the stored count differs
-- while a slot is held; else {0, the soonest TTL left among the slots
-- and the promises to others (at least 1), free slots...}: none listed
-- when the promises to others keep every free slot.
-- Slot keys share KEYS[1]'s hash tag. A refusal looks at the first
-- 2*MAX_FREE_HINT slots, a differing count at the first MAX_INSPECTED:
-- a few dozen commands however many permits a semaphore has.

-- semHeld reports whether any of the first n slots is held; n past
-- MAX_INSPECTED counts as held (a count above that binds until it lapses,
-- at most a TTL after its last grant or extension).
local function semHeld(n)
	if n > MAX_INSPECTED then
		return true
	end
	for i = 0, n - 1 do
		if redis.call('EXISTS', KEYS[1] .. ':' .. i) == 1 then
			return true
		end
	end
	return false
end

-- look is a refusal listing the free slots, with how many are free and
-- the soonest TTL left among the held ones (nil if none).
local function look()
	local reply, soonest, free = {0, 0}, nil, math.max(tonumber(ARGV[1]) - 2 * MAX_FREE_HINT, 0)
	local limit = tonumber(ARGV[5])
	for i = 0, math.min(tonumber(ARGV[1]), 2 * MAX_FREE_HINT) - 1 do
		local left = redis.call('PTTL', KEYS[1] .. ':' .. i)
		if left == -2 then
			free = free + 1
			if #reply - 2 < limit then
				reply[#reply + 1] = i
			end
		elseif left > 0 and (not soonest or left < soonest) then
			soonest = left
		end
	end
	return reply, free, soonest
end

local got = redis.call('MGET', KEYS[1], KEYS[4])
local stored, told = got[1], got[2]
if stored and stored ~= ARGV[1] then
	if semHeld(tonumber(stored)) then
		return {-1, tonumber(stored)}
	end
	stored = nil
end

-- The live promises: to the caller (mine), and to others (kept, each
-- keeping a free slot; the soonest lapses in claim ms), as live reads.
local mine, others, kept, claim = false, 0, '', nil
if told then
	local now = clock()
	for m, d in string.gmatch(told, '(%S+) (%d+),') do
		local left = tonumber(d) - now
		if left <= 0 then
			redis.call('ZREM', KEYS[3], m)
		elseif string.sub(m, 1, TOKEN) == ARGV[7] then
			mine = true
		else
			others = others + 1
			kept = kept .. m .. ' ' .. d .. ','
			claim = math.min(claim or left, left)
		end
	end
end
local reply, free, soonest
if others > 0 and redis.call('GET', KEYS[2]) ~= ARGV[3] then
	reply, free, soonest = look()
	if free <= others then
		return {0, math.min(soonest or claim, claim)}
	end
end

local ok = redis.call('SET', KEYS[2], ARGV[3], 'NX', 'PX', ARGV[4])
if not ok and redis.call('GET', KEYS[2]) == ARGV[3] then
	ok = redis.call('PEXPIRE', KEYS[2], ARGV[4])
end
if ok then
	held(ARGV[2], ARGV[4], stored, ARGV[1])
	unwatch(KEYS[3], ARGV[6])
	if told and kept == '' then
		redis.call('DEL', KEYS[4])
	elseif mine then
		redis.call('SET', KEYS[4], kept, 'KEEPTTL')
	end
	return {1, 0}
end
if not reply then
	reply, free, soonest = look()
end
reply[2] = math.max(math.min(soonest or claim or 1, claim or soonest or 1), 1)
return reply
