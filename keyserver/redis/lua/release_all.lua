-- ReleaseAll: release.lua for every key of a set: a key that holds the
-- token, marked or not, goes to the first waiter in its line, or is
-- deleted when nobody waits.
-- KEYS: the set's lock keys, each followed by its line (one Cluster
-- slot). ARGV[1]: token; ARGV[2]: claim TTL in ms (keyserver.ClaimTTL);
-- ARGV[3]: a promise's length (49).
-- Reply: how many keys were let go.
--
-- The keys are read with one MGET; when each holds the token unmarked
-- (release.lua's common case: nobody joined a line), one DEL lets go of
-- them all, and a set costs three commands however many names it has.
local keys = {}
for i = 1, #KEYS, 2 do
	keys[#keys + 1] = KEYS[i]
end
local vals = redis.call('MGET', unpack(keys))
local plain = true
for _, v in ipairs(vals) do
	if not (v == ARGV[1] and #v == 49 and string.byte(v, 17) == 46 and string.byte(v, -1) ~= 126) then
		plain = false
		break
	end
end
if plain then
	redis.call('DEL', unpack(keys))
	return #keys
end

local n, plen = 0, tonumber(ARGV[3]) -- see release.lua
for i, key in ipairs(keys) do
	local v, line = vals[i], KEYS[2 * i]
	if v == ARGV[1] and #v == 49 and string.byte(v, 17) == 46 and string.byte(v, -1) ~= 126 then
		n = n + 1
		redis.call('DEL', key)
	elseif v == ARGV[1] or v == ARGV[1] .. '+' then
		n = n + 1
		local next = redis.call('ZPOPMIN', line)
		if next[1] then
			local promise = string.sub(next[1], 1, plen)
			redis.call('SET', key, promise, 'PX', ARGV[2])
			pcall(redis.call, 'PUBLISH', string.sub(next[1], plen + 1), promise .. key)
		else
			redis.call('DEL', key)
		end
	end
end
return n
