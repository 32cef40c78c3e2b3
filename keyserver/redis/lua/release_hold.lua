-- ReleaseHold of a read or write hold: ends the token's hold of a
-- read-write lock, as its writer or as a reader. Once nobody holds the
-- lock (no writer, no live reader) and no promise of it stands, it tells
-- the earliest watcher: a writer is promised the lock for ARGV[4] ms
-- (key:told, which keeps readers and other writers out); a reader has
-- every watcher told and taken out, as readers share. A reader whose hold
-- expired and whom nothing has tidied away yet is still let go, and
-- reported as held.
-- KEYS[1]: key:w; KEYS[2]: key:r; KEYS[3]: key:watchers; KEYS[4]:
-- key:told.
-- ARGV[1]: token; ARGV[2]: '1' for the writer, '0' for a reader; ARGV[3]:
-- the promises' key's TTL in ms (keyserver.LineTTL); ARGV[4]: a
-- promise's TTL in ms (keyserver.ClaimTTL); ARGV[5]: the lock's key,
-- which names the turn.
-- Reply: 1 or 0.
--
-- Watchers and promises: see release_permit.lua; a reader's promise ends
-- in '}' (125).

-- tell: see release_permit.lua.
local function tell(m)
	pcall(redis.call, 'PUBLISH', string.sub(m, 50), string.sub(m, 1, 49) .. ARGV[#ARGV])
end

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
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if ARGV[2] == '0' and redis.call('ZCOUNT', KEYS[2], '(' .. string.format('%d', now), '+inf') > 0 then
	return 1
end
local out = {}
for m, d in string.gmatch(redis.call('GET', KEYS[4]) or '', '(%S+) (%d+),') do
	if tonumber(d) > now then
		return 1
	end
	redis.call('ZREM', KEYS[3], m)
	out[m] = true
end
for _, m in ipairs(ws) do
	if not out[m] then
		if string.byte(m, 49) == 125 then
			redis.call('DEL', KEYS[3], KEYS[4])
			for _, r in ipairs(ws) do
				if not out[r] then
					tell(r)
				end
			end
			return 1
		end
		if string.byte(m, 1) == 33 then
			redis.call('ZREM', KEYS[3], m)
			redis.call('DEL', KEYS[4])
		else
			redis.call('SET', KEYS[4], m .. ' ' .. string.format('%d', now + tonumber(ARGV[4])) .. ',', 'PX', ARGV[3])
		end
		tell(m)
		return 1
	end
end
redis.call('DEL', KEYS[4])
return 1
