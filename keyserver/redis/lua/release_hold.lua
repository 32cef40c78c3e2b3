-- ReleaseHold of a read or write hold: ends the token's hold, as writer
-- or reader. Once nobody holds the lock and no promise stands, it tells
-- the earliest watcher (passOn). An expired reader not yet tidied away is
-- let go and reported as held.
-- KEYS[1]: key:w; KEYS[2]: key:r; KEYS[3]: key:watchers; KEYS[4]:
-- key:told (see release_permit.lua).
-- ARGV[1]: token; ARGV[2]: '1' for the writer, '0' for a reader; ARGV[3]:
-- key:told's TTL in ms (keyserver.LineTTL); ARGV[4]: a promise's TTL in
-- ms (layout.ClaimTTL); ARGV[5], ARGV[6]: the releasing call's
-- watcher member and its score, or '' (Server.rejoin: a call that still
-- waits gives back its attempt's hold and keeps its place); ARGV[7]: the
-- lock's key, which names the turn.
-- Reply: 1 or 0.
enlist(KEYS[3], ARGV[5], ARGV[6], ARGV[3])
if ARGV[2] == '1' then
	if redis.call('GET', KEYS[1]) ~= ARGV[1] then
		return 0
	end
	redis.call('DEL', KEYS[1])
elseif redis.call('ZREM', KEYS[2], ARGV[1]) == 0 then
	return 0
end
local ws = redis.call('ZRANGE', KEYS[3], 0, -1)
if #ws == 0 or ARGV[2] == '0' and redis.call('EXISTS', KEYS[1]) == 1 then
	return 1
end
local now = clock()
if ARGV[2] == '0' and redis.call('ZCOUNT', KEYS[2], '(' .. string.format('%d', now), '+inf') > 0 then
	return 1
end
local kept, out = live(redis.call('GET', KEYS[4]) or '', KEYS[3], now)
if kept == '' then -- one promise at a time
	passOn(ws, out, kept, now, KEYS[3], KEYS[4], ARGV[4], ARGV[3])
end
return 1
