-- ReleasePermit: frees a semaphore's slot if it holds the token, and
-- tells the earliest watcher. The count stays until it lapses: a call
-- with another count looks at the slots.
-- KEYS[1]: the slot's key; KEYS[2]: key:watchers.
-- ARGV[1]: token; ARGV[2]: the semaphore key, which names the turn.
-- Reply: 1 or 0.

-- A watcher, a member of key:watchers, is its call's promise (49 bytes)
-- and then its Server's channel. tell publishes the watcher's promise and
-- the primitive's key (the last ARGV) there; a user whose ACL denies
-- PUBLISH still lets go (pcall). notifyAll tells every watcher and
-- empties the set; notifyFirst tells the earliest only and takes it out,
-- unless it is a reader (its promise ends in '}', 125): then it tells
-- them all, as readers share.
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

if redis.call('GET', KEYS[1]) ~= ARGV[1] then
	return 0
end
redis.call('DEL', KEYS[1])
notifyFirst(KEYS[2])
return 1
