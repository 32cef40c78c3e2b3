-- AcquireAll and ExtendAll, and AcquireOrHolder (a set of one key):
-- stores the token in every key of a set, or in none, by acquire.lua's
-- rule for each key: free, or holding the token, the token with the
-- waiters' mark, or the caller's promise.
-- KEYS: the set's lock keys (one Cluster slot).
-- ARGV[1]: token; ARGV[2]: TTL in ms; ARGV[3]: the caller's promise.
-- Reply: 1 when stored, else {left, order, 0} for the first key that
-- another value holds (the prelude's holder).
--
-- Each key is tried with one SET NX GET, which stores the token in a free
-- key and reads what holds a taken one: a free set costs a command per key
-- and nothing more. A key that another value holds undoes the keys this
-- run stored (one DEL), so that the server never holds part of a set.
local mine, marked = ARGV[1], ARGV[1] .. '+'
local olds = {}
local refused, v
for i, k in ipairs(KEYS) do
	v = redis.call('SET', k, mine, 'NX', 'PX', ARGV[2], 'GET')
	if v and v ~= mine and v ~= marked and v ~= ARGV[3] then
		refused = i
		break
	end
	olds[i] = v or false
end

if not refused then
	-- Keys the call already held (an extension, a retry) or was promised
	-- are renewed; a promise, or a key with the waiters' mark, keeps the
	-- mark.
	for i, k in ipairs(KEYS) do
		if olds[i] == mine then
			redis.call('SET', k, mine, 'PX', ARGV[2])
		elseif olds[i] then
			redis.call('SET', k, marked, 'PX', ARGV[2])
		end
	end
	return 1
end

local stored = {}
for j = 1, refused - 1 do
	if not olds[j] then
		stored[#stored + 1] = KEYS[j]
	end
end
if #stored > 0 then
	redis.call('DEL', unpack(stored))
end
return holder(KEYS[refused], v, 0)
