-- Inspect: what the server holds under one name, read in one step that
-- writes nothing.
-- KEYS[1]: the lock key; KEYS[2]: its line; KEYS[3]: its fence counter;
-- KEYS[4]: the semaphore key, its stored count; KEYS[5]: the read-write
-- lock's key; KEYS[6]: the election's key. The keys built here from
-- KEYS[4..6] (key:N, key:watchers, key:w, key:r, key:wait, key:fence)
-- share their hash tag, and so their Cluster slot.
-- ARGV[1]: the most slots and readers to list (keyserver.MaxInspected).
-- Reply, flat (a transport need not read nested arrays): lock value or
-- '', its whole TTL (a lock-delay is the client's to tell from the
-- lease), waiters, fence; permits, the semaphore's watchers; writer or
-- '', its TTL, 1 if a writer waits else 0, the read-write lock's
-- watchers; leader token or '', value, its TTL, term; the number of held
-- slots listed, the number of held slots, the number of readers; then a
-- token and its TTL for each held slot listed (the lowest first) and for
-- each reader listed. A TTL is at least 1, or -1 for a key without one.

-- left is key's TTL as the reply gives it.
local function left(key)
	local l = redis.call('PTTL', key)
	if l == -1 then
		return -1
	end
	return math.max(l, 1)
end

local function num(key)
	return tonumber(redis.call('GET', key) or '0')
end

local max = tonumber(ARGV[1])
local r = {'', 0, redis.call('ZCARD', KEYS[2]), num(KEYS[3])}
local v = redis.call('GET', KEYS[1])
if v then
	-- the waiters' mark ('+', 43) after a ranked token (TOKEN bytes) is
	-- the server's own
	if #v == TOKEN + 1 and string.byte(v, -1) == 43 then
		v = string.sub(v, 1, TOKEN)
	end
	r[1], r[2] = v, left(KEYS[1])
end

local permits = tonumber(redis.call('GET', KEYS[4]) or '0')
r[5], r[6] = permits, redis.call('ZCARD', KEYS[4] .. ':watchers')

local rw = KEYS[5]
r[7], r[8], r[9], r[10] = redis.call('GET', rw .. ':w') or '', 0, redis.call('EXISTS', rw .. ':wait'), redis.call('ZCARD', rw .. ':watchers')
if r[7] ~= '' then
	r[8] = left(rw .. ':w')
end

local cur = redis.call('HMGET', KEYS[6], 't', 'v')
r[11], r[12], r[13], r[14] = '', '', 0, num(KEYS[6] .. ':fence')
if cur[1] then
	r[11], r[12], r[13] = cur[1], cur[2] or '', left(KEYS[6])
end

local now = clock()

-- The slots that may be held, lowest first: the first max, and those
-- key:held records live.
local seen, slots = {}, {}
local function candidate(i)
	if i and i < permits and not seen[i] then
		seen[i] = true
		slots[#slots + 1] = i
	end
end
for _, m in ipairs(redis.call('ZRANGE', KEYS[4] .. ':held', '(' .. now, '+inf', 'BYSCORE')) do
	candidate(tonumber(m))
end
for i = 0, math.min(permits, max) - 1 do
	candidate(i)
end
table.sort(slots)
r[15], r[16] = 0, 0
local listed = {}
for c = 1, #slots, 512 do
	local keys = {}
	for j = c, math.min(c + 511, #slots) do
		keys[#keys + 1] = KEYS[4] .. ':' .. slots[j]
	end
	local held = redis.call('MGET', unpack(keys))
	for j = 1, #keys do
		if held[j] then
			r[16] = r[16] + 1
			if r[15] < max then
				r[15] = r[15] + 1
				listed[#listed + 1] = held[j]
				listed[#listed + 1] = left(keys[j])
			end
		end
	end
end
if r[16] == 0 then
	r[5] = 0 -- a count binds nothing while no slot is held
end

r[17] = redis.call('ZCOUNT', rw .. ':r', '(' .. now, '+inf')
for _, v in ipairs(listed) do
	r[#r + 1] = v
end
local readers = redis.call('ZRANGE', rw .. ':r', '(' .. now, '+inf', 'BYSCORE', 'LIMIT', 0, max, 'WITHSCORES')
for i = 1, #readers, 2 do
	r[#r + 1] = readers[i]
	r[#r + 1] = math.max(tonumber(readers[i + 1]) - now, 1)
end
return r
