-- AcquireInLine: acquire_all.lua for one key that also puts a refused
-- caller in the key's line and counts the waiters ahead of it.
-- KEYS[1]: the lock key; KEYS[2]: its line (layout.LineKey).
-- ARGV[1]: token; ARGV[2]: TTL in ms; ARGV[3]: the caller's promise;
-- ARGV[4]: the line's TTL in ms (keyserver.LineTTL); ARGV[5]: the
-- caller's member, or '' (no rank: never in line); ARGV[6]: next's
-- member, which joins the line whatever the answer, or ''.
-- Reply: as acquire_all.lua's, ahead counted.
-- The line is a ZSET scored all 0, so that members sort by rank. A key
-- holding a ranked token gets the waiters' mark '+' once a waiter joins,
-- so that release.lua deletes an unmarked key without looking for a line
-- (four commands for an uncontended lock). Unranked values are never
-- marked. A grant while someone may be in line stores the token marked.
local v = redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2], 'GET')
local renewed = ARGV[6] ~= ''
if renewed then
	redis.call('ZADD', KEYS[2], 0, ARGV[6])
	redis.call('PEXPIRE', KEYS[2], ARGV[4])
end
local mine = ARGV[1] .. '+'
if v == ARGV[3] and v ~= ARGV[1] then
	redis.call('SET', KEYS[1], mine, 'PX', ARGV[2])
	return 1
end
if not v or v == ARGV[1] or v == mine then
	if ARGV[5] ~= '' or renewed or v == mine then
		redis.call('SET', KEYS[1], mine, 'PX', ARGV[2])
	elseif v then
		redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
	end
	if ARGV[5] ~= '' then
		redis.call('ZREM', KEYS[2], ARGV[5])
	end
	return 1
end
local ahead = 0
if ARGV[5] ~= '' then
	ahead = join(KEYS[1], KEYS[2], ARGV[5], not renewed and ARGV[4])
end
-- Refused, with someone in line: mark v if it is a ranked token without
-- the mark (see release.lua).
if plain(v) then
	redis.call('SET', KEYS[1], v .. '+', 'KEEPTTL')
end
return holder(KEYS[1], v, ahead)
