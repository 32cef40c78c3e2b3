-- AcquireAll and ExtendAll: stores the token in every key of a set, or in
-- none, by acquire.lua's rule for each key: free, or holding the token,
-- the token with the waiters' mark, or the caller's promise.
-- KEYS: the set's lock keys (one Cluster slot).
-- ARGV[1]: token; ARGV[2]: TTL in ms; ARGV[3]: the caller's promise.
-- Reply: 1 when stored, else {left, order, 0} for the first key that
-- another value holds, as acquire_or_holder.lua describes its holder.
-- rank: see acquire_or_holder.lua.
local function rank(t)
	if #t == 49 + 1 and string.byte(t, -1) == 43 then
		t = string.sub(t, 1, 49)
	end
	if #t == 49 and string.byte(t, 17) == 46 then
		return string.sub(t, 1, 25)
	end
end

local mine, marked = ARGV[1], ARGV[1] .. '+'
local vals = {}
for i, k in ipairs(KEYS) do
	local v = redis.call('GET', k)
	if v and v ~= mine and v ~= marked and v ~= ARGV[3] then
		local h, c = rank(v), rank(mine)
		local order = 0
		if h and c and h < c then
			order = 1
		elseif h and c and c < h then
			order = 2
		end
		local left = redis.call('PTTL', k)
		if left < 0 then
			left = 0
		else
			left = math.max(left, 1)
		end
		return {left, order, 0}
	end
	vals[i] = v
end
for i, k in ipairs(KEYS) do
	local v = mine
	if vals[i] == marked or vals[i] == ARGV[3] then
		v = marked
	end
	redis.call('SET', k, v, 'PX', ARGV[2])
end
return 1
