-- ReleaseAll: release.lua for every key of a set.
-- KEYS: the set's lock keys, each followed by its line (one Cluster
-- slot). ARGV[1]: token; ARGV[2]: claim TTL in ms (layout.ClaimTTL).
-- Reply: how many keys were let go.
--
-- The keys are read with one MGET; when each holds the token plain
-- (release.lua's common case: nobody joined a line), one DEL lets go of
-- them all, and a set costs three commands however many names it has.
local keys = {}
for i = 1, #KEYS, 2 do
	keys[#keys + 1] = KEYS[i]
end
local vals = redis.call('MGET', unpack(keys))
local all = true
for _, v in ipairs(vals) do
	if not (v == ARGV[1] and plain(v)) then
		all = false
		break
	end
end
if all then
	redis.call('DEL', unpack(keys))
	return #keys
end

local n = 0
for i, key in ipairs(keys) do
	local v = vals[i]
	if v == ARGV[1] and plain(v) then
		n = n + 1
		redis.call('DEL', key)
	elseif v == ARGV[1] or v == ARGV[1] .. '+' then
		n = n + 1
		handOver(key, KEYS[2 * i], ARGV[2])
	end
end
return n
