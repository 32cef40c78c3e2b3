-- AcquireOrHolder: acquire.lua, describing the holder that refused.
-- KEYS[1]: the lock key.
-- ARGV[1]: token; ARGV[2]: TTL in ms; ARGV[3]: the caller's promise.
-- Reply: 1 when granted, else {left, order, ahead} (decodeHolder): left
-- is the key's PTTL, at least 1 (a key under a millisecond from expiry
-- still exists), 0 for a key without one; order compares the holder's
-- rank with the caller's as keyserver.Compare does (0 unranked, 1 the
-- holder's first, 2 the caller's); ahead, the waiters before the caller
-- in line, is 0 here.
local v = redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2], 'GET')
if v and (v == ARGV[1] or v == ARGV[3] or v == ARGV[1] .. '+') then
	if v ~= ARGV[1] then
		v = ARGV[1] .. '+'
	end
	redis.call('SET', KEYS[1], v, 'PX', ARGV[2])
	v = false
end
if not v then
	return 1
end
local ahead = 0

-- rank is keyserver.RankOf of a value, less the waiters' mark ('+', 43):
-- a ranked token is 49 (keyserver.TokenLen) bytes with a dot (46) at 17,
-- and its rank is its first 25 (keyserver.RankLen).
local function rank(t)
	if #t == 49 + 1 and string.byte(t, -1) == 43 then
		t = string.sub(t, 1, 49)
	end
	if #t == 49 and string.byte(t, 17) == 46 then
		return string.sub(t, 1, 25)
	end
end
local h, c = rank(v), rank(ARGV[1])
local order = 0
if h and c and h < c then
	order = 1
elseif h and c and c < h then
	order = 2
end
local left = redis.call('PTTL', KEYS[1])
if left < 0 then
	left = 0
else
	left = math.max(left, 1)
end
return {left, order, ahead}
