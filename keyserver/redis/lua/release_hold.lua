-- ReleaseHold: ends the token's hold of a read-write lock, as its writer
-- or as a reader, and tells the earliest watcher (all, if it is a
-- reader). A reader whose hold expired and whom nothing has tidied away
-- yet is still let go, and reported as held.
-- KEYS[1]: key:w; KEYS[2]: key:r; KEYS[3]: key:watchers.
-- ARGV[1]: token; ARGV[2]: '1' for the writer, '0' for a reader; ARGV[3]:
-- the lock's key, which names the turn.
-- Reply: 1 or 0.

-- tell, notifyAll, notifyFirst: see release_permit.lua.
local function tell(m)
	pcall(redis.call, 'PUBLISH', string.sub(m, 50), string.sub(m, 1, 49) .. ARGV[#ARGV])
end
local function notifyAll(wkey)
	local ms = redis.call('ZRANGE', wkey, 0, -1)
	if #ms > 0 then
		redis.call('DEL', wkey)
		for _, m in ipairs(ms) do
			tell(m)
		end
	end
end
local function notifyFirst(wkey)
	local first = redis.call('ZPOPMIN', wkey)
	if first[1] then
		if string.byte(first[1], 49) == 125 then
			notifyAll(wkey)
		end
		tell(first[1])
	end
end

if ARGV[2] == '1' then
	if redis.call('GET', KEYS[1]) ~= ARGV[1] then
		return 0
	end
	redis.call('DEL', KEYS[1])
elseif redis.call('ZREM', KEYS[2], ARGV[1]) == 0 then
	return 0
end
notifyFirst(KEYS[3])
return 1
