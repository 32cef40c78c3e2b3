-- AcquireAll and ExtendAll, and AcquireOrHolder (a set of one key):
-- stores the token in every key of a set, or in none, by acquire.lua's
-- rule for each key.
-- KEYS: the set's lock keys (one Cluster slot).
-- ARGV[1]: token; ARGV[2]: TTL in ms; ARGV[3]: the caller's promise.
-- Reply: 1 when stored, else {left, order, 0} (holder) for the first key
-- that another value holds.
--
-- Each key is tried with one SET NX GET, which stores the token in a free
-- key and reads what holds a taken one: a free set costs a command per
-- key. A key that another value holds undoes the keys this run stored
-- (one DEL), so that the server never holds part of a set.
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
	-- Keys the call held (an extension, a retry) or was promised are
	-- renewed; a promise, or a key with the waiters' mark, keeps the mark.
	for i, k in ipairs(KEYS) do
		if olds[i] == mine then
			redis.call('SET', k, mine, 'PX', ARGV[2])
		elseif olds[i] then
			redis.call('SET', k, marked, 'PX', ARGV[2])
		end
	end
	return 1
end

undo(olds, refused, 1)
return holder(KEYS[refused], v, 0)
