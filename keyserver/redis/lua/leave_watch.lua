-- The end of a primitive's watch (the last of its call on a Server, which
-- no grant ended): the watcher leaves the watchers, and a promise made to
-- it passes on as a release would pass it (passOn).
-- KEYS[1]: key:watchers; KEYS[2]: key:told.
-- ARGV[1]: the watcher's member; ARGV[2]: key:told's TTL in ms
-- (keyserver.LineTTL); ARGV[3]: a promise's TTL in ms
-- (layout.ClaimTTL); ARGV[4]: the primitive's key, which names the
-- turn.
-- Reply: 1.
redis.call('ZREM', KEYS[1], ARGV[1])
local told = redis.call('GET', KEYS[2])
if not told or not string.find(told, ARGV[1] .. ' ', 1, true) then
	return 1
end
local now = clock()
local kept, out = live(told, KEYS[1], now, ARGV[1])
passOn(redis.call('ZRANGE', KEYS[1], 0, -1), out, kept, now, KEYS[1], KEYS[2], ARGV[3], ARGV[2])
return 1
